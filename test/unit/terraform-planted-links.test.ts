import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CtsError } from "../../src/errors/cts-error.ts";
import { LocalDriver, type LocalDriverParts } from "../../src/terraform/driver.ts";
import { captureInit, restoreInit } from "../../src/terraform/init-reuse.ts";
import { Initializer } from "../../src/terraform/initializer.ts";
import { installedProviders } from "../../src/terraform/installed-providers.ts";
import type { Operation } from "../../src/terraform/operation.ts";
import { ChangeCommands, discardKeptPlans } from "../../src/terraform/plan-apply.ts";
import { launchedProviders } from "../../src/terraform/warm-providers.ts";
import { TASK_DIR_PATHS } from "../../src/terraform/working-dir.ts";
import { WorkingRoot } from "../../src/terraform/working-root.ts";

const NO_CHANGE = { changesPresent: false, summary: { add: 0, change: 0, destroy: 0 }, resources: [], output: "No changes." };
const EXTRA = "terraform.tfvars";
const ws = { task: "web", json: '{"resource":{}}', files: { [EXTRA]: 'x = "1"\n' } };

/**
 * A scratch working root with a folder outside it (what a planted link points at), and a local
 * driver on it whose Terraform commands are only recorded: the real folder, file, init-record and
 * take-over steps, none of Terraform's.
 */
function scratch() {
  const base = mkdtempSync(join(tmpdir(), "cts-links-"));
  const root = join(base, "wd");
  const outside = join(base, "outside");
  mkdirSync(outside);
  writeFileSync(join(outside, "victim"), "untouched");
  const ran: string[] = [];
  const op = (dir: string) =>
    ({
      task: "web",
      dir,
      commandName: (args: string[]) => `tofu ${args.join(" ")}`,
      throwIfAborted: () => {},
      dispose: () => {},
      until: <T>(p: Promise<T>) => p,
    }) as unknown as Operation;
  const parts = {
    folders: new WorkingRoot(root, 1_000, () => {}),
    runner: { operation: (_ws: unknown, dir: string) => op(dir), env: () => ({}), phase: (_t: string, _p: string, step: () => Promise<unknown>) => step() },
    initializer: new Initializer({
      steps: { runInit: async () => void ran.push("init"), ensureWorkspace: async () => void ran.push("workspace select") },
      env: () => ({}),
      waitForLocks: (_op, step) => step(),
      phase: (_t, _p, step) => step(),
    }),
    changes: { run: async (kind: string) => (ran.push(kind), NO_CHANGE) },
    providers: launchedProviders,
    waitForLocks: (_op: unknown, step: () => Promise<unknown>) => step(),
  } as unknown as LocalDriverParts;
  const outsideNow = () => readdirSync(outside).map((n) => `${n}=${readFileSync(join(outside, n), "utf8")}`);
  return { base, root, dir: join(root, "web"), outside, ran, driver: new LocalDriver(parts), outsideNow, op, done: () => rmSync(base, { recursive: true, force: true }) };
}

async function assertRefused(p: Promise<unknown>, link: string): Promise<void> {
  await assert.rejects(p, (err: unknown) => {
    assert.ok(err instanceof CtsError, String(err));
    assert.equal(err.code, "WORKING_DIR_UNUSABLE", err.message);
    assert.ok(err.message.includes(link), `names the link ${link}: ${err.message}`);
    assert.match(err.message, /symbolic link/);
    return true;
  });
}

describe("a link planted in a task's working dir", () => {
  // Every path the driver writes or reads by a fixed name, and an extra file the task gives.
  const planted = [...TASK_DIR_PATHS, EXTRA];

  it("covers every fixed name the driver uses in a task's folder", () => {
    for (const name of ["main.tf.json", ".cts-files.json", ".cts-init", ".terraform.lock.hcl", ".terraform", ".terraform/terraform.tfstate", ".terraform/environment", ".cts-plan.tfplan"])
      assert.ok(planted.includes(name), name);
  });

  for (const name of planted) {
    it(`at ${name}: refused before any Terraform command, naming the link, nothing written outside`, async () => {
      const s = scratch();
      try {
        await s.driver.apply(ws); // a first run makes the folder, its files and the init record
        assert.deepEqual(s.ran, ["init", "workspace select", "apply"]);
        s.ran.length = 0;
        if (name.startsWith(".terraform/")) mkdirSync(join(s.dir, ".terraform"), { recursive: true });
        const link = join(s.dir, name);
        rmSync(link, { recursive: true, force: true });
        const folderLike = name === ".terraform" || name === ".terraform/providers" || name === ".terraform/modules";
        symlinkSync(folderLike ? s.outside : join(s.outside, "victim"), link);
        const before = s.outsideNow();
        await assertRefused(s.driver.apply(ws), link);
        assert.deepEqual(s.ran, [], "no Terraform command ran");
        assert.deepEqual(s.outsideNow(), before, "nothing written outside the working dir");
        // The next run after the link is gone works again.
        rmSync(link);
        await s.driver.apply(ws);
        assert.match(s.ran.join(" "), /apply/, "the next run after the link is gone works");
      } finally {
        s.done();
      }
    });
  }

  it("at the task's folder itself: refused, naming it, nothing written in the folder it points at", async () => {
    const s = scratch();
    try {
      mkdirSync(s.root);
      symlinkSync(s.outside, s.dir);
      await assertRefused(s.driver.apply(ws), s.dir);
      assert.deepEqual(s.outsideNow(), ["victim=untouched"]);
      assert.deepEqual(s.ran, []);
    } finally {
      s.done();
    }
  });

  it("at a kept plan: `apply` of it is refused naming the link, and discarding removes the link only", async () => {
    const s = scratch();
    try {
      mkdirSync(s.dir, { recursive: true });
      const ref = ".cts-kept-0123456789abcdef.tfplan";
      symlinkSync(join(s.outside, "victim"), join(s.dir, ref));
      const op = { ...s.op(s.dir), json: async () => assert.fail("apply ran") } as unknown as Operation;
      await assertRefused(new ChangeCommands(1_000).applyKept(op, ref), join(s.dir, ref));
      await discardKeptPlans(s.dir, ref, "web");
      assert.deepEqual(readdirSync(s.dir), []);
      assert.deepEqual(s.outsideNow(), ["victim=untouched"]);
    } finally {
      s.done();
    }
  });

  it("in what init-reuse and warm providers read: a linked lock file or backend settings is not read, and a copy writes no file through a link", async () => {
    const s = scratch();
    try {
      mkdirSync(join(s.dir, ".terraform"), { recursive: true });
      writeFileSync(join(s.outside, "lock"), 'provider "registry.opentofu.org/hashicorp/null" {\n  version = "3.2.4"\n}\n');
      symlinkSync(join(s.outside, "lock"), join(s.dir, ".terraform.lock.hcl"));
      assert.deepEqual(await installedProviders(s.dir), [], "the lock file behind a link is not read");
      assert.equal((await captureInit(s.dir))?.lockFile, undefined, "nor copied to other tasks");
      symlinkSync(join(s.outside, "victim"), join(s.dir, ".terraform", "terraform.tfstate"));
      assert.equal(await captureInit(s.dir), undefined, "backend settings behind a link make no snapshot");
      // A fresh folder where a link appeared between the check and the copy: refused, the link named.
      const fresh = join(s.root, "fresh");
      mkdirSync(join(fresh, ".terraform"), { recursive: true });
      symlinkSync(join(s.outside, "victim"), join(fresh, ".terraform", "terraform.tfstate"));
      await assert.rejects(restoreInit(fresh, { backend: { text: "{}", mode: 0o644 }, links: [], takenAt: 0 }, "web"), (err: unknown) => err instanceof CtsError && err.code === "WORKING_DIR_UNUSABLE");
      assert.deepEqual(s.outsideNow(), ["lock=" + readFileSync(join(s.outside, "lock"), "utf8"), "victim=untouched"]);
    } finally {
      s.done();
    }
  });
});
