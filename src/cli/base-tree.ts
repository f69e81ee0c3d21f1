import { access, mkdir, mkdtemp, rm, symlink } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join, relative, resolve } from "node:path";
import { execa } from "execa";
import { extract } from "tar";
import { CtsError } from "../errors/cts-error.ts";

/** A project's files at a git ref, unpacked in a temporary folder (`cts diff --base`, `--head`). */
export interface BaseTree {
  /** The config file's path inside the unpacked tree. */
  config: string;
  /** Removes the folder. */
  dispose(): Promise<void>;
}

/**
 * Unpacks the files of `ref` (`git archive`: the repository and its worktree are left alone) and
 * finds `config` there. The tree has no node_modules of its own, so the working tree's nearest
 * node_modules is linked in where it sits: the base config imports the installed cdktf-sync.
 */
export async function checkoutBase(ref: string, config: string, role: "base" | "head" = "base"): Promise<BaseTree> {
  const configDir = dirname(resolve(config));
  const top = (await git(["rev-parse", "--show-toplevel"], configDir, ref, role)).trim();
  await git(["rev-parse", "--verify", "--quiet", `${ref}^{commit}`], top, ref, role);
  const dir = await mkdtemp(join(tmpdir(), `cts-diff-${role}-`));
  try {
    const archive = join(dir, `${role}.tar`);
    await git(["archive", "--format=tar", "-o", archive, ref], top, ref, role);
    const tree = join(dir, "tree");
    await mkdir(tree);
    await extract({ file: archive, cwd: tree });
    await rm(archive);
    const modules = await nearestNodeModules(configDir);
    if (modules) {
      const at = relative(top, dirname(modules));
      const link = join(tree, at.startsWith("..") ? "" : at, "node_modules");
      if (!(await exists(link))) await symlink(modules, link, "dir");
    }
    const inTree = join(tree, relative(top, resolve(config)));
    if (!(await exists(inTree)))
      throw new CtsError("DIFF_BASE_UNAVAILABLE", "external", `The config ${relative(top, resolve(config))} does not exist at ${ref}: compare against a ref that has it.`);
    return { config: inTree, dispose: () => rm(dir, { recursive: true, force: true }) };
  } catch (err) {
    await rm(dir, { recursive: true, force: true });
    throw err;
  }
}

async function git(args: string[], cwd: string, ref: string, role: string): Promise<string> {
  const r = await execa("git", args, { cwd, reject: false });
  if (r.exitCode !== 0) {
    const why = (r.stderr || r.stdout || `exit ${r.exitCode ?? r.signal}`).trim().split("\n")[0];
    throw new CtsError("DIFF_BASE_UNAVAILABLE", "external", `cannot read the ${role} ref '${ref}' (git ${args[0]} in ${cwd}): ${why}.`);
  }
  return r.stdout;
}

async function nearestNodeModules(from: string): Promise<string | undefined> {
  for (let dir = from; ; dir = dirname(dir)) {
    if (await exists(join(dir, "node_modules"))) return join(dir, "node_modules");
    if (dirname(dir) === dir) return undefined;
  }
}

async function exists(path: string): Promise<boolean> {
  return access(path).then(
    () => true,
    () => false,
  );
}
