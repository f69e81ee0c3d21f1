import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { createController } from "../../src/daemon/compose.ts";
import { createLogger } from "../../src/log/logger.ts";
import { inProcessSynthesizer } from "../../src/synth/synthesizer.ts";
import { fakeWatcher } from "../support/fake-watcher.ts";
import type { RunResult } from "../../src/terraform/types.ts";
import { MemberList } from "../fixtures/tasks.ts";
import { Task, services, type ServicesCondition, type TaskScope } from "../../src/index.ts";
import { TerraformOutput } from "cdktf";

/** A task whose every plan waits for `cts approve`. */
class Approved extends Task<ServicesCondition> {
  constructor() {
    super({ name: "approved", condition: services({ names: ["web"] }), bufferPeriod: false, approval: "always" });
  }
  synthesize(scope: TaskScope): void {
    new TerraformOutput(scope, "pool", { value: "p" });
  }
}

/** A task whose Terraform finds `changes` to apply at each apply, in turn (the state already holds what it makes). */
function setup(changes: boolean[]) {
  const task = new MemberList("members", "/tmp/m.txt");
  const lines: string[] = [];
  const result = (c: boolean): RunResult => ({ changesPresent: c, summary: { add: c ? 1 : 0, change: 0, destroy: 0 }, output: "" });
  const controller = createController({
    loaded: { config: { tasks: [task] }, file: "/x/cts.config.ts", dir: "/x" },
    reader: { read: async () => [] as never },
    driver: { taskDir: (t: string) => `/nonexistent/${t}`, apply: async () => result(changes.shift() ?? false), plan: async () => result(false), destroy: async () => result(false) },
    synthesizer: inProcessSynthesizer(() => task),
    log: createLogger({ write: (line) => lines.push(line) }),
    watcher: fakeWatcher().watcher,
    retries: 0,
  });
  return { controller, lines };
}

describe("the first apply after a start (as CTS, every task applies once)", () => {
  it("is a no-op when Terraform finds nothing to change (after `cts once`, a restart), and logs it as one", async () => {
    const { controller, lines } = setup([false]);
    const [first] = await controller.once();
    assert.equal(first!.outcome, "no-op");
    assert.ok(lines.some((l) => /task 'members': no-op\b/.test(l)), lines.join("\n"));
    assert.ok(!lines.some((l) => /task 'members': applied/.test(l)));
    assert.equal((await controller.runNow("members")).outcome, "no-op", "the same inputs again: skipped");
  });

  it("is applied when Terraform changes something; a later apply that changes nothing (forced) stays applied", async () => {
    const { controller } = setup([true, false]);
    assert.equal((await controller.once())[0]!.outcome, "applied");
    assert.equal((await controller.runNow("members", { force: true })).outcome, "applied");
  });

  it("is applied when it applies a held plan a person approved, whatever the driver says of the apply's changes", async () => {
    const task = new Approved();
    // A driver (Terraform Cloud's, after a restart) whose apply of a kept plan does not repeat that the plan had changes.
    const applyResult: RunResult = { changesPresent: false, summary: { add: 1, change: 0, destroy: 0 }, output: "" };
    const controller = createController({
      loaded: { config: { tasks: [task] }, file: "/x/cts.config.ts", dir: "/x" },
      reader: { read: async () => [] as never },
      driver: {
        taskDir: (t: string) => `/nonexistent/${t}`,
        apply: async () => applyResult,
        plan: async () => applyResult,
        destroy: async () => applyResult,
        planToApply: async () => ({ changesPresent: true, summary: { add: 1, change: 0, destroy: 0 }, output: "", plan: { resource_changes: [] }, ref: "plan-1" }),
        applyPlan: async () => applyResult,
        discardPlan: async () => {},
      },
      synthesizer: inProcessSynthesizer(() => task),
      log: createLogger({ write: () => {} }),
      watcher: fakeWatcher().watcher,
      retries: 0,
    });
    assert.equal((await controller.once())[0]!.outcome, "held");
    const approved = await controller.approve("approved");
    assert.equal((approved as { outcome?: string }).outcome ?? controller.events.list("approved")[0]!.outcome, "applied");
    assert.equal(controller.events.list("approved")[0]!.outcome, "applied");
  });
});
