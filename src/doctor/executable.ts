import { constants } from "node:fs";
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
