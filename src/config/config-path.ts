import { extname } from "node:path";

/** Whether a path is a CTS config (an .hcl or .json file, or a directory of them) rather than a TypeScript config. */
export function isCtsConfigPath(path: string): boolean {
  const ext = extname(path).toLowerCase();
  return ext === ".hcl" || ext === ".json" || (ext === "" && !path.endsWith(".ts"));
}
