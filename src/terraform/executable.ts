import { accessSync, constants } from "node:fs";
import { access } from "node:fs/promises";
import { delimiter, isAbsolute, join, resolve } from "node:path";

/** The absolute path of `name` (a command on PATH, or a path), or undefined when it is not an executable file. */
export async function findExecutable(name: string, env: NodeJS.ProcessEnv = process.env, cwd = process.cwd()): Promise<string | undefined> {
  const candidates = name.includes("/") || isAbsolute(name) ? [resolve(cwd, name)] : (env.PATH ?? "").split(delimiter).filter(Boolean).map((dir) => join(dir, name));
  for (const path of candidates) {
    try {
      await access(path, constants.X_OK);
      return path;
    } catch {
      /* try the next */
    }
  }
  return undefined;
}

/** The Terraform binaries cts tries when the config names none: OpenTofu first, as CTS's successor setups do. */
export const DEFAULT_BINARIES = ["tofu", "terraform"];

/** The binary a config without driver.terraform.binary runs: tofu if on PATH, else terraform if on PATH, else "tofu" (whose error then says so). */
export function defaultTerraformBinary(env: NodeJS.ProcessEnv = process.env): string {
  for (const name of DEFAULT_BINARIES)
    for (const dir of (env.PATH ?? "").split(delimiter).filter(Boolean)) {
      try {
        accessSync(join(dir, name), constants.X_OK);
        return name;
      } catch {
        /* not here */
      }
    }
  return DEFAULT_BINARIES[0]!;
}
