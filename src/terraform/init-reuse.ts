import { createHash, randomUUID } from "node:crypto";
import { lstat, mkdir, readdir, readlink, rm, stat, symlink } from "node:fs/promises";
import { dirname, join, resolve, sep } from "node:path";
import { folderError, isFolderFault, readKeptFile, writeKept } from "../driver/safe-files.ts";

/**
 * What `init` left in a fresh task folder, when that is only: the lock file, the backend settings
 * (`.terraform/terraform.tfstate`) and one symlink per provider package into the plugin cache.
 * Nothing of it depends on the task: another fresh folder with the same init inputs and the same
 * environment gets the same files from its own `init`.
 */
export interface InitSnapshot {
  lockFile?: { text: string; mode: number };
  backend?: { text: string; mode: number };
  /** Provider package links: path under `.terraform/providers`, the link text init wrote, and what it resolves to. */
  links: Array<{ path: string; target: string; resolved: string }>;
  takenAt: number;
}

const LOCK_FILE = ".terraform.lock.hcl";
const DATA_DIR = ".terraform";
// <host>/<namespace>/<type>/<version>/<platform>: the depth of a provider package under providers/.
const PACKAGE_DEPTH = 5;
/** A snapshot is reused for this long: a fresh `init` later could pick a newer provider release. */
const MAX_AGE_MS = 10 * 60_000;
/** Distinct init inputs remembered at once (a snapshot is a few KB). */
const MAX_SNAPSHOTS = 64;

/**
 * Reads what `init` made in `dir`, or undefined when it made anything else (modules, provider
 * binaries copied instead of linked, files we do not know): then each task keeps running its own
 * `init`. Links must point outside the task folder (into the plugin cache, or the filesystem mirror
 * the cache links to); `withinDir`, when known, narrows that to the plugin cache.
 */
export async function captureInit(dir: string, withinDir?: string): Promise<InitSnapshot | undefined> {
  const snap: InitSnapshot = { links: [], takenAt: Date.now() };
  const lockFile = readPlain(join(dir, LOCK_FILE));
  if (lockFile) snap.lockFile = lockFile;
  const data = join(dir, DATA_DIR);
  // Only a real folder: init made it; a link there is nothing to copy (and the driver refuses it).
  if (await lstat(data).then((st) => !st.isDirectory(), () => false)) return undefined;
  for (const name of await readdir(data).catch(() => [] as string[])) {
    if (name === "environment") continue; // the selected workspace: written by `workspace select`, not init
    if (name === "terraform.tfstate") {
      const backend = readPlain(join(data, name));
      if (!backend) return undefined;
      snap.backend = backend;
    } else if (name === "providers") {
      if (!(await lstat(join(data, name))).isDirectory()) return undefined;
      if (!(await collectLinks(join(data, name), "", 0, snap.links))) return undefined;
    } else return undefined;
  }
  for (const l of snap.links) {
    if (l.resolved === resolve(dir) || l.resolved.startsWith(resolve(dir) + sep)) return undefined;
    if (withinDir && !l.resolved.startsWith(resolve(withinDir) + sep)) return undefined;
  }
  return snap;
}

/** A plain file's text and mode, read without following a link; undefined for anything else. */
function readPlain(path: string): { text: string; mode: number } | undefined {
  try {
    return readKeptFile(path);
  } catch {
    return undefined;
  }
}

async function collectLinks(base: string, rel: string, depth: number, out: InitSnapshot["links"]): Promise<boolean> {
  const here = join(base, rel);
  for (const name of await readdir(here)) {
    const path = join(rel, name);
    const st = await lstat(join(base, path));
    if (depth + 1 === PACKAGE_DEPTH) {
      if (!st.isSymbolicLink()) return false;
      const target = await readlink(join(base, path));
      const resolved = resolve(dirname(join(base, path)), target);
      out.push({ path, target, resolved });
    } else if (!st.isDirectory() || !(await collectLinks(base, path, depth + 1, out))) return false;
  }
  return true;
}

/**
 * Gives a fresh task folder what `init` gave the folder of the snapshot: the same lock file
 * (versions and hashes unchanged), backend settings and links to the same provider packages.
 * Returns false, leaving nothing behind, when a package is gone or a link would not resolve to the
 * same place from here; throws WORKING_DIR_UNUSABLE when the folder cannot be written. Terraform
 * itself still checks every package against the lock file's hashes on each command. The package
 * links it makes are cts's own (as init's are); the files it writes are written without
 * following links.
 */
export async function restoreInit(dir: string, snap: InitSnapshot, task?: string): Promise<boolean> {
  const providers = join(dir, DATA_DIR, "providers");
  for (const l of snap.links) {
    const from = join(providers, l.path);
    if (resolve(dirname(from), l.target) !== l.resolved) return false;
    if (!(await stat(l.resolved).then((s) => s.isDirectory(), () => false))) return false;
  }
  try {
    await mkdir(join(dir, DATA_DIR), { recursive: true, mode: 0o755 });
    for (const l of snap.links) {
      const from = join(providers, l.path);
      await mkdir(dirname(from), { recursive: true, mode: 0o755 });
      await symlink(l.target, from);
    }
    if (snap.backend) writeKept(join(dir, DATA_DIR), "terraform.tfstate", freshLineage(snap.backend.text), task, snap.backend.mode);
    // Last: a lock file next to an incomplete .terraform would make a later `init` keep it.
    if (snap.lockFile) writeKept(dir, LOCK_FILE, snap.lockFile.text, task, snap.lockFile.mode);
    return true;
  } catch (err) {
    await clearInit(dir);
    // A folder that cannot be written (space, mount, permissions, a link) is the error, not a reason to run init there.
    if (isFolderFault(err) || (err as { code?: unknown }).code === "WORKING_DIR_UNUSABLE") throw folderError("copy another task's init into", dir, err, task);
    return false;
  }
}

/**
 * Terraform (not tofu) stamps its backend settings file with a random lineage on each init; a
 * copy gets a new one, as its own init would have given it.
 */
function freshLineage(text: string): string {
  return text.replace(/("lineage":\s*")[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}(")/, (_, a: string, b: string) => `${a}${randomUUID()}${b}`);
}

/** Removes what init (or a partial restore) made, so the folder is fresh again. */
async function clearInit(dir: string): Promise<void> {
  await rm(join(dir, LOCK_FILE), { force: true });
  await rm(join(dir, DATA_DIR), { recursive: true, force: true });
}

/** True when `dir` has never been initialized: no lock file and no `.terraform`. */
export async function isFreshDir(dir: string): Promise<boolean> {
  const gone = (p: string) => lstat(p).then(() => false, () => true);
  return (await gone(join(dir, LOCK_FILE))) && (await gone(join(dir, DATA_DIR)));
}

/**
 * The key under which `init` results are shared: the init inputs' hash, the config's top-level
 * blocks that `initHash` does not look into (check, ephemeral, import… may imply providers), and
 * the whole environment (a CLI config, mirror or credentials in a task's env change what init
 * installs).
 */
export function reuseKey(initHash: string, mainJson: string, files: Record<string, string>, env: Record<string, string>): string {
  const h = createHash("sha256").update(initHash).update("\0");
  const known = new Set(["terraform", "provider", "resource", "data", "variable", "output", "locals", "module", "//"]);
  const docs: Array<[string, string]> = [["main.tf.json", mainJson], ...Object.entries(files).filter(([n]) => n.endsWith(".tf.json")).sort(([a], [b]) => (a < b ? -1 : 1))];
  for (const [name, text] of docs) {
    h.update(name).update("\0");
    try {
      const doc = JSON.parse(text) as Record<string, unknown>;
      for (const k of Object.keys(doc).sort()) if (!known.has(k)) h.update(k).update("\0").update(JSON.stringify(doc[k])).update("\0");
    } catch {
      h.update(text);
    }
  }
  h.update(JSON.stringify(Object.entries(env).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))));
  return h.digest("hex");
}

/**
 * Runs `init` once per distinct set of init inputs for fresh task folders: the first fresh folder
 * of a key runs `init`; the others wait for it and get a copy of its result (`restoreInit`) instead
 * of a `tofu init` of their own. A folder that was initialized before always runs its own `init`
 * (its lock file may hold older versions that a fresh init would not pick).
 */
export function createInitReuse(opts: { pluginCacheDir?: string; now?: () => number } = {}) {
  const now = opts.now ?? Date.now;
  const snapshots = new Map<string, InitSnapshot>();
  const pending = new Map<string, Promise<InitSnapshot | undefined>>();

  const fresh = (key: string): InitSnapshot | undefined => {
    const s = snapshots.get(key);
    if (s && now() - s.takenAt > MAX_AGE_MS) snapshots.delete(key);
    return snapshots.get(key);
  };

  const remember = (key: string, snap: InitSnapshot) => {
    snapshots.delete(key);
    snapshots.set(key, snap);
    while (snapshots.size > MAX_SNAPSHOTS) snapshots.delete(snapshots.keys().next().value!);
  };

  return {
    /**
     * Initializes `dir`: by copy when a snapshot of `key` exists (or is being made), else with
     * `runInit`, keeping a snapshot of a fresh folder's result. `wait` bounds waiting for another
     * task's init by this operation's own cancellation; `task` is named in a folder's error.
     * Resolves "reused" or "ran".
     */
    async init(dir: string, key: string, runInit: () => Promise<void>, wait: <T>(p: Promise<T>) => Promise<T>, task?: string): Promise<"reused" | "ran"> {
      if (!(await isFreshDir(dir))) {
        await runInit();
        return "ran";
      }
      const ready = fresh(key) ?? (pending.has(key) ? await wait(pending.get(key)!) : undefined);
      if (ready && (await restoreInit(dir, ready, task))) return "reused";
      // Another task already started making this key's snapshot (checked and claimed in one step).
      if (pending.has(key)) {
        await runInit();
        return "ran";
      }
      let settle!: (s: InitSnapshot | undefined) => void;
      pending.set(key, new Promise((r) => (settle = r)));
      let snap: InitSnapshot | undefined;
      try {
        await runInit();
        snap = await captureInit(dir, opts.pluginCacheDir).catch(() => undefined);
        if (snap) remember(key, snap);
      } finally {
        pending.delete(key);
        settle(snap);
      }
      return "ran";
    },
    /** Forgets the snapshot of `key` (a folder made from it needed a real init after all). */
    forget(key: string): void {
      snapshots.delete(key);
    },
  };
}

/** The reuse registry `createInitReuse` returns. */
export type InitReuse = ReturnType<typeof createInitReuse>;
