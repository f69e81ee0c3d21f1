import { mkdir, mkdtemp, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));

/**
 * A user's project for a test, under the repository's git-ignored `.cts/`: an ES module package
 * whose installed `cdktf-sync` is this repository (its sources, under `--conditions=cts-source`)
 * and whose `packages` (default the `@cdktf` bindings) are the repository's, with the folders named
 * in `dirs`. What a project holds in its own node_modules is what `cts diff` finds for a base ref.
 */
export async function linkedProject(prefix: string, dirs: string[] = ["tasks"], packages: string[] = ["@cdktf"]): Promise<string> {
  await mkdir(join(ROOT, ".cts"), { recursive: true });
  const project = await mkdtemp(join(ROOT, ".cts", `${prefix}-`));
  for (const d of [...dirs, "node_modules"]) await mkdir(join(project, d), { recursive: true });
  await symlink(ROOT, join(project, "node_modules", "cdktf-sync"));
  for (const p of packages) await symlink(join(ROOT, "node_modules", p), join(project, "node_modules", p));
  await writeFile(join(project, "package.json"), JSON.stringify({ type: "module" }));
  return project;
}
