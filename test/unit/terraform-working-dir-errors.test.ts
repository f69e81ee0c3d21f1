import { afterEach, describe, it, mock } from "node:test";
import assert from "node:assert/strict";
import fs, { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { syncBuiltinESMExports } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { folderError } from "../../src/driver/safe-files.ts";
import { CtsError } from "../../src/errors/cts-error.ts";
import { Initializer } from "../../src/terraform/initializer.ts";
import type { Operation } from "../../src/terraform/operation.ts";
import { ensureTaskDir, writeTaskFiles } from "../../src/terraform/working-dir.ts";
import { WorkingRoot } from "../../src/terraform/working-root.ts";

// cts runs as root here, so chmod does not stop a write and there is no read-only mount to use:
// the system call fails with the errno a full disk, a read-only mount or a denied write gives.

/** An error as Node's fs gives it for `syscall` on `path`. */
function errno(code: string, syscall: string, path: string): NodeJS.ErrnoException {
  const text: Record<string, string> = { ENOSPC: "no space left on device", EROFS: "read-only file system", EACCES: "permission denied", EDQUOT: "disk quota exceeded" };
  return Object.assign(new Error(`${code}: ${text[code]}, ${syscall} '${path}'`), { code, syscall, path });
}

/** Makes `name` of node:fs (as every module imports it) throw `code` for paths under `under`. */
function failing(name: "openSync" | "rmSync" | "mkdirSync", code: string, under: string): void {
  const real = fs[name] as (...args: unknown[]) => unknown;
  mock.method(fs, name, (path: unknown, ...rest: unknown[]) => {
    if (typeof path === "string" && path.startsWith(under)) throw errno(code, name.replace("Sync", "").replace("rm", "unlink"), path);
    return real.call(fs, path, ...rest);
  });
  syncBuiltinESMExports();
}

function scratch() {
  const base = mkdtempSync(join(tmpdir(), "cts-wd-errors-"));
  return { root: join(base, "wd"), done: () => rmSync(base, { recursive: true, force: true }) };
}

function assertUnusable(err: unknown, parts: { folder: string; cause: RegExp; fix: RegExp }): true {
  assert.ok(err instanceof CtsError, String(err));
  assert.equal(err.code, "WORKING_DIR_UNUSABLE", err.message);
  assert.equal(err.task, "web");
  assert.ok(err.message.includes(parts.folder), `names the folder ${parts.folder}: ${err.message}`);
  assert.match(err.message, parts.cause);
  assert.match(err.message, parts.fix);
  return true;
}

describe("a working dir that cannot be written: one code, the folder, the cause and the fix", () => {
  afterEach(() => {
    mock.restoreAll();
    syncBuiltinESMExports();
  });

  it("a full filesystem says to free space on the filesystem that holds the folder", async () => {
    const s = scratch();
    try {
      const dir = await ensureTaskDir(s.root, "web");
      failing("openSync", "ENOSPC", dir);
      await assert.rejects(writeTaskFiles(dir, "web", "{}"), (err) =>
        assertUnusable(err, { folder: dir, cause: /ENOSPC: no space left on device/, fix: new RegExp(`free space on the filesystem that holds ${dir} \\(df -h ${dir}\\)`) }),
      );
      assert.deepEqual(fs.readdirSync(dir), [], "no temp file left behind");
    } finally {
      s.done();
    }
  });

  it("a quota says the same", () => {
    const err = folderError("write", "/srv/wd/web/main.tf.json", errno("EDQUOT", "open", "/srv/wd/web/.main.tf.json.1.tmp"), "web");
    assertUnusable(err, { folder: "/srv/wd/web", cause: /EDQUOT/, fix: /free space on the filesystem that holds \/srv\/wd\/web/ });
  });

  it("a read-only mount says so, where the bare EROFS of an unlink was a TASK_RUN_FAILED before", async () => {
    const s = scratch();
    try {
      const dir = await ensureTaskDir(s.root, "web");
      failing("rmSync", "EROFS", dir);
      const op = { task: "web", dir } as unknown as Operation;
      const initializer = new Initializer({
        steps: { runInit: async () => assert.fail("init ran"), ensureWorkspace: async () => {} },
        env: () => ({}),
        waitForLocks: (_op, step) => step(),
        phase: (_t, _p, step) => step(),
      });
      await assert.rejects(initializer.ensure(op, { task: "web", json: "{}" }), (err) =>
        assertUnusable(err, { folder: dir, cause: /EROFS: read-only file system, unlink/, fix: new RegExp(`${dir} is on a read-only mount: mount it read-write`) }),
      );
    } finally {
      s.done();
    }
  });

  it("a denied write says whose permission to fix, on the folder named", async () => {
    const s = scratch();
    try {
      mkdirSync(s.root, { recursive: true });
      failing("mkdirSync", "EACCES", join(s.root, "web"));
      const folders = new WorkingRoot(s.root, 1_000, () => {});
      await assert.rejects(folders.prepare("web"), (err) =>
        assertUnusable(err, { folder: join(s.root, "web"), cause: /EACCES: permission denied, mkdir/, fix: new RegExp(`chown or chmod ${s.root}`) }),
      );
    } finally {
      s.done();
    }
  });

  it("a file where the task's folder belongs is named, with what to do", async () => {
    const s = scratch();
    try {
      mkdirSync(s.root, { recursive: true });
      fs.writeFileSync(join(s.root, "web"), "not a folder");
      await assert.rejects(ensureTaskDir(s.root, "web"), (err) => assertUnusable(err, { folder: join(s.root, "web"), cause: /is not a folder/, fix: /remove or move the file/ }));
    } finally {
      s.done();
    }
  });
});
