import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdir, readFile, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { createController } from "../../src/daemon/compose.ts";
import { CtsError } from "../../src/errors/cts-error.ts";
import { createLogger } from "../../src/log/logger.ts";
import { APPLIED_FILE, FileTaskState } from "../../src/state/file-state.ts";
import { inProcessSynthesizer } from "../../src/synth/synthesizer.ts";
import type { ModuleTaskSpec } from "../../src/synth/task-ref.ts";
import { services } from "../../src/task/conditions.ts";
import type { RunResult, TaskWorkspace } from "../../src/terraform/types.ts";
import { tempDir } from "../support/cts.ts";
import { MemberList } from "../fixtures/tasks.ts";

const ok: RunResult = { changesPresent: true, summary: { add: 1, change: 0, destroy: 0 }, output: "" };
const exists = (p: string) => stat(p).then(() => true, () => false);
const spec = (name: string): ModuleTaskSpec => ({ name, module: "./modules/echo", condition: services({ names: ["web"] }), variables: { path: `/tmp/${name}` } }) as ModuleTaskSpec;

/** A controller whose driver works in real dirs under `root` (it writes main.tf.json, as the real one does). */
function setup(root: string) {
  const task = new MemberList("members", "/tmp/m.txt");
  let fail = false;
  const seenDuringApply: boolean[] = [];
  const cooled: string[] = [];
  const dirOf = (t: string) => join(root, t);
  const state = new FileTaskState(root, dirOf);
  const appliedKey = async (t: string) => JSON.parse(await readFile(join(state.dirOf(t), APPLIED_FILE), "utf8").catch(() => "{}")).key as string | undefined;
  const driver = {
    taskDir: dirOf,
    async apply(ws: TaskWorkspace) {
      await mkdir(dirOf(ws.task), { recursive: true });
      seenDuringApply.push((await appliedKey(ws.task)) !== undefined);
      if (fail) throw new CtsError("TERRAFORM_FAILED", "external", "apply failed", { task: ws.task });
      return ok;
    },
    async plan(ws: TaskWorkspace) {
      await mkdir(dirOf(ws.task), { recursive: true });
      await writeFile(join(dirOf(ws.task), "main.tf.json"), ws.json);
      return ok;
    },
    destroy: async () => ok,
    coolDown: async (task?: string) => void cooled.push(task ?? "*"),
  };
  const controller = createController({
    loaded: { config: { tasks: [task] }, file: "/x/cts.config.ts", dir: "/x" },
    reader: { read: async () => [] as never },
    driver,
    synthesizer: inProcessSynthesizer(() => task),
    log: createLogger({ write: () => {} }),
    retries: 0,
    state,
  });
  return { controller, dirOf, state, appliedKey, seenDuringApply, cooled, failNext: (v: boolean) => (fail = v) };
}

describe("the applied hash (the no-op skip) survives only a finished apply", () => {
  it("is removed before an apply starts and written after it succeeds; a failed apply leaves none", async () => {
    const tmp = await tempDir();
    try {
      const { controller, state, appliedKey, seenDuringApply, failNext } = setup(tmp.dir);
      const [first] = await controller.once();
      assert.equal(first!.outcome, "applied");
      assert.equal(await appliedKey("members"), first!.synth!.hash, "kept in the task's state folder, not in its working dir");
      assert.equal(await exists(join(tmp.dir, "members", ".cts-applied-hash")), false);
      // Forgotten (a takeover): the same JSON applies again, and the key is gone while Terraform runs.
      state.forgetAppliedKey("members");
      await controller.pause(0);
      await controller.resume();
      await controller.idle();
      assert.deepEqual(seenDuringApply, [false, false], "no key on disk during either apply");
      assert.equal(await appliedKey("members"), first!.synth!.hash);
      failNext(true);
      state.forgetAppliedKey("members");
      await controller.pause(1_000);
      await controller.resume();
      await controller.idle();
      assert.equal(await appliedKey("members"), undefined, "a failed apply (or a crash during one) leaves no key: the next start applies");
      await controller.stop(100);
    } finally {
      await tmp.cleanup();
    }
  });
});

describe("warm provider processes of tasks that stop running here", () => {
  it("are ended for a deleted task, and for every task when the instance pauses (HA step-down)", async () => {
    const tmp = await tempDir();
    try {
      const { controller, cooled } = setup(tmp.dir);
      await controller.once();
      await controller.deleteTask("members");
      assert.deepEqual(cooled, ["members"]);
      await controller.pause(100);
      assert.deepEqual(cooled, ["members", "*"]);
      await controller.stop(100);
    } finally {
      await tmp.cleanup();
    }
  });
});

describe("working dirs of tasks that are gone", () => {
  it("removes a deleted task's working dir once its run is over", async () => {
    const tmp = await tempDir();
    try {
      const { controller, dirOf } = setup(tmp.dir);
      await controller.once();
      assert.ok(await exists(dirOf("members")));
      await controller.deleteTask("members");
      assert.equal(await exists(dirOf("members")), false);
      await controller.stop(100);
    } finally {
      await tmp.cleanup();
    }
  });

  it("removes the working dir of an inspect-only task, and keeps a kept task's dir", async () => {
    const tmp = await tempDir();
    try {
      const { controller, dirOf } = setup(tmp.dir);
      const planned = await controller.dryRunModuleTask(spec("just-looking"));
      assert.equal(planned.outcome, "planned");
      assert.equal(await exists(dirOf("just-looking")), false, "the dry run's dir is gone");
      controller.addModuleTask(spec("kept"));
      await controller.planTask("kept");
      await controller.dryRunModuleTask({ ...spec("kept"), variables: { path: "/tmp/other" } } as ModuleTaskSpec);
      assert.ok(await exists(join(dirOf("kept"), "main.tf.json")), "inspecting a kept task's new spec leaves its dir");
      await controller.stop(100);
    } finally {
      await tmp.cleanup();
    }
  });
});

describe("what the runtime says about itself", () => {
  it("counts finished runs per task and overall", async () => {
    const tmp = await tempDir();
    try {
      const { controller } = setup(tmp.dir);
      assert.equal(controller.runCount(), 0);
      await controller.once();
      await controller.runNow("members");
      assert.equal(controller.runCount("members"), 2);
      assert.equal(controller.runCount(), 2);
      await controller.whenIdle();
      await controller.stop(100);
    } finally {
      await tmp.cleanup();
    }
  });
});
