import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { formatCheck } from "../../src/doctor/check.ts";
import { checkTaskFolder, checkTaskFolders, MIN_FREE_BYTES, type FolderProbe } from "../../src/doctor/task-folders.ts";

function scratch() {
  const base = mkdtempSync(join(tmpdir(), "cts-doctor-dirs-"));
  const root = join(base, "wd");
  mkdirSync(root);
  return { base, root, done: () => rmSync(base, { recursive: true, force: true }) };
}

/** A filesystem with `free` bytes left whose writes fail with `code` (as a full disk or a read-only mount answers). */
function fakeFs(free: number, code?: string): FolderProbe {
  return {
    freeBytes: () => free,
    writeProbe: (dir) => {
      if (code) throw Object.assign(new Error(`${code}: ${code === "EROFS" ? "read-only file system" : "no space left on device"}, open '${dir}/.cts-doctor-1.tmp'`), { code });
    },
  };
}

describe("cts doctor's check of every task's own folder", () => {
  it("passes a folder cts can make, and one that is there and writable, saying the free space", () => {
    const s = scratch();
    try {
      mkdirSync(join(s.root, "api"));
      const [made, there] = checkTaskFolders([
        { task: "web", dir: join(s.root, "web") },
        { task: "api", dir: join(s.root, "api") },
      ]);
      assert.equal(made!.name, "task-dir:web");
      assert.ok(made!.ok, made!.detail);
      assert.match(made!.detail, /can be made \(in .*\/wd\), \d+ MB free/);
      assert.ok(there!.ok, there!.detail);
      assert.match(there!.detail, /api is a writable folder, \d+ MB free/);
      assert.deepEqual(readdirSync(s.root), ["api"], "the probe leaves nothing behind and makes no folder");
    } finally {
      s.done();
    }
  });

  it("fails a task folder that is a link, or a file, naming it with the fix", () => {
    const s = scratch();
    try {
      mkdirSync(join(s.base, "elsewhere"));
      symlinkSync(join(s.base, "elsewhere"), join(s.root, "web"));
      const linked = checkTaskFolder("web", join(s.root, "web"));
      assert.equal(linked.ok, false);
      assert.match(formatCheck(linked), /✗ task-dir:web: .*\/wd\/web is a symbolic link.*Fix: remove the link/);
      writeFileSync(join(s.root, "api"), "x");
      assert.match(formatCheck(checkTaskFolder("api", join(s.root, "api"))), /✗ task-dir:api: .*\/wd\/api is a file, not a folder.*Fix: remove or move the file/);
    } finally {
      s.done();
    }
  });

  it("fails a folder with a planted .terraform.lock.hcl link, naming the link", () => {
    const s = scratch();
    try {
      mkdirSync(join(s.root, "web"));
      symlinkSync(join(s.base, "victim"), join(s.root, "web", ".terraform.lock.hcl"));
      const r = checkTaskFolder("web", join(s.root, "web"));
      assert.equal(r.ok, false);
      assert.ok(r.detail.includes(join(s.root, "web", ".terraform.lock.hcl")), r.detail);
      assert.match(r.fix!, /remove the link/);
    } finally {
      s.done();
    }
  });

  it("fails a folder made read-only (no write bit), whoever cts runs as, naming the error a run would fail with", () => {
    const s = scratch();
    try {
      const dir = join(s.root, "own-dir");
      mkdirSync(dir, { mode: 0o555 });
      chmodSync(dir, 0o555);
      const r = checkTaskFolder("web", dir);
      assert.equal(r.ok, false);
      assert.match(formatCheck(r), new RegExp(`✗ task-dir:web: ${dir} is read-only \\(mode 0555\\).*Fix: make it writable .*its workingDir option.*\\(a run fails with WORKING_DIR_UNUSABLE\\)`));
      chmodSync(dir, 0o755);
      assert.equal(checkTaskFolder("web", dir).ok, true);
    } finally {
      s.done();
    }
  });

  it("fails a read-only folder with the mount fix, and a full one with the free-space fix", () => {
    const s = scratch();
    try {
      const dir = join(s.root, "web");
      mkdirSync(dir);
      const ro = checkTaskFolder("web", dir, fakeFs(10 * MIN_FREE_BYTES, "EROFS"));
      assert.match(formatCheck(ro), new RegExp(`✗ task-dir:web: cannot write in ${dir}: EROFS: read-only file system.*Fix: ${dir} is on a read-only mount: mount it read-write`));
      const full = checkTaskFolder("web", dir, fakeFs(10 * MIN_FREE_BYTES, "ENOSPC"));
      assert.match(full.fix!, new RegExp(`free space on the filesystem that holds ${dir}`));
      const low = checkTaskFolder("web", dir, fakeFs(MIN_FREE_BYTES / 4));
      assert.equal(low.ok, false);
      assert.match(formatCheck(low), new RegExp(`only 64 MB free on the filesystem that holds ${dir}.*Fix: free space on the filesystem that holds ${dir} \\(df -h ${dir}\\)`));
    } finally {
      s.done();
    }
  });
});
