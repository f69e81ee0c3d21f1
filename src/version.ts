import { readFileSync } from "node:fs";

/** The fields of cts's own package.json that cts reads at run time. */
export interface OwnPackage {
  name: string;
  version: string;
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
}

/** cts's package.json: one level above both src/ (this repository) and dist/ (the installed package). */
export const OWN_PACKAGE: OwnPackage = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as OwnPackage;

/** The version of cts, from package.json. */
export const VERSION: string = OWN_PACKAGE.version;
