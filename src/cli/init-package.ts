import { basename } from "node:path";
import type { CdkName } from "../cdktf/cdk-library.ts";
import { OWN_PACKAGE, VERSION } from "../version.ts";

/**
 * What a cts project's package.json needs; versions come from cts's own package.json, so they match.
 * `cdk`: the library the project's tasks use (cdktn's example task needs no provider binding).
 */
export function projectPackage(cdk: CdkName = "cdktf"): { type: string; scripts: Record<string, string>; dependencies: Record<string, string>; devDependencies: Record<string, string> } {
  const ours = { ...OWN_PACKAGE.dependencies, ...OWN_PACKAGE.devDependencies };
  const pick = (names: string[]) => Object.fromEntries(names.map((n) => [n, ours[n] ?? "*"]));
  return {
    type: "module",
    scripts: {
      // cdktf-sync/register: a root import of a big provider binding loads lazily in tests too, as in cts.
      test: "node --import tsx --import cdktf-sync/register --test test/*.test.ts",
      typecheck: "tsc --noEmit",
    },
    // The provider bindings the example task uses, and the cdktf they are built for.
    dependencies: { [OWN_PACKAGE.name]: `^${VERSION}`, ...(cdk === "cdktn" ? CDKTN_DEPENDENCIES() : pick(["@cdktf/provider-local", "cdktf", "constructs"])) },
    devDependencies: pick(["typescript", "@types/node", "tsx"]),
  };
}

/** cdktn, and the constructs its 0.24 accepts (its peer range, narrower than cdktf's). */
const CDKTN_DEPENDENCIES = () => ({ cdktn: { ...OWN_PACKAGE.dependencies, ...OWN_PACKAGE.devDependencies }.cdktn ?? "^0.24.0", constructs: ">=10.6.0 <10.8.0" });

/** A new package.json for a project in `dir` whose tasks use `cdk`. */
export function newPackageJson(dir: string, cdk: CdkName = "cdktf"): string {
  const name = basename(dir).toLowerCase().replace(/[^a-z0-9._-]+/g, "-").replace(/^[._-]+/, "") || "cts-project";
  return JSON.stringify({ name, private: true, ...projectPackage(cdk) }, null, 2) + "\n";
}

/** The test script `npm init` writes: it fails on purpose, so `npm test` could never pass. */
export const NPM_INIT_TEST = 'echo "Error: no test specified" && exit 1';

/** What `completePackageJson` did, or why it would not. */
export interface CompletedPackage {
  /** The new package.json text. */
  text: string;
  /** Keys added (`type`, `scripts.typecheck`, `dependencies.cdktf`…). */
  added: string[];
  /** Values changed, each as `key: old → new (why)`, to print: nothing is rewritten silently. */
  changed: string[];
  /** Set when the package cannot be made to work without the user's decision: the exact change to make. */
  problem?: string;
}

/**
 * Adds what a cts project needs to an existing package.json (`npm i cdktf-sync` creates one with
 * only the dependency). What `npm init` writes as a placeholder is replaced, and reported: its
 * `"type": "commonjs"` when the project has no JavaScript file it would govern (`jsFiles`), and its
 * failing test script. A CommonJS package with JavaScript files is left alone: `problem` says what
 * to change. Anything else already there stays as it is.
 */
export function completePackageJson(text: string, jsFiles: string[] = [], cdk: CdkName = "cdktf"): CompletedPackage {
  const pkg = JSON.parse(text) as Record<string, unknown>;
  const want = projectPackage(cdk);
  const added: string[] = [];
  const changed: string[] = [];
  const indent = /^\{\n(\s+)/.exec(text)?.[1] ?? "  ";
  if (pkg.type === undefined) {
    pkg.type = want.type;
    added.push("type");
  } else if (pkg.type === "commonjs" && jsFiles.length === 0) {
    // npm init's default since npm 10.9/11: no file of the project is CommonJS yet, so nothing breaks.
    pkg.type = want.type;
    changed.push(`"type": "commonjs" → "module" (npm init's default; cdktf-sync, cts.config.ts and the tasks are ES modules)`);
  } else if (pkg.type !== "module") {
    const files = jsFiles.length ? ` and ${jsFiles.slice(0, 3).join(", ")}${jsFiles.length > 3 ? ", …" : ""} would change meaning if cts switched it` : "";
    return {
      text,
      added,
      changed,
      problem: `package.json has "type": ${JSON.stringify(pkg.type)}${files}; cdktf-sync, cts.config.ts and the tasks are ES modules (tsc --noEmit fails on their imports otherwise). Set "type": "module" in package.json${jsFiles.length ? " (rename those CommonJS files to .cjs)" : ""}, then run \`cts init\` again.`,
    };
  }
  const scripts = (pkg.scripts ?? {}) as Record<string, string>;
  if (scripts.test === NPM_INIT_TEST) {
    scripts.test = want.scripts.test!;
    changed.push(`scripts.test: npm init's placeholder → ${JSON.stringify(want.scripts.test)}`);
  }
  pkg.scripts = scripts;
  for (const section of ["scripts", "dependencies", "devDependencies"] as const) {
    const have = (pkg[section] ?? {}) as Record<string, string>;
    const other = section === "dependencies" ? ((pkg.devDependencies ?? {}) as Record<string, string>) : section === "devDependencies" ? ((pkg.dependencies ?? {}) as Record<string, string>) : {};
    for (const [k, v] of Object.entries(want[section])) {
      if (k in have || k in other) continue;
      have[k] = v;
      added.push(`${section}.${k}`);
    }
    pkg[section] = have;
  }
  return { text: JSON.stringify(pkg, null, indent) + "\n", added, changed };
}
