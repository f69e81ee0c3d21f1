import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { createController } from "../../src/daemon/compose.ts";
import { createLogger } from "../../src/log/logger.ts";
import { inProcessSynthesizer } from "../../src/synth/synthesizer.ts";
import type { RunResult } from "../../src/terraform/types.ts";
import { ScheduledMembers } from "../fixtures/tasks.ts";
import { fakeClock } from "../support/fake-clock.ts";
import { fakeWatcher } from "../support/fake-watcher.ts";
import { settled } from "../support/waits.ts";

describe("a schedule task on the runtime's clock", () => {
  it("runs at each time its cron names, by the clock's wall time, and no more once stopped", async () => {
    // 10:07:30 local time: the next times of "*/15 * * * *" are 10:15, 10:30…
    const start = new Date(2026, 0, 1, 10, 7, 30).getTime();
    const clock = fakeClock({ wallStart: start });
    const task = new ScheduledMembers("nightly", "/tmp/nightly.txt", "*/15 * * * *");
    const w = fakeWatcher();
    const result: RunResult = { changesPresent: false, summary: { add: 0, change: 0, destroy: 0 }, output: "" };
    const driver = { taskDir: (t: string) => `/nonexistent/${t}`, apply: async () => result, plan: async () => result, destroy: async () => result };
    const controller = createController({
      loaded: { config: { tasks: [task] }, file: "/x/cts.config.ts", dir: "/x" },
      reader: { read: async () => [] as never },
      driver,
      synthesizer: inProcessSynthesizer(() => task),
      log: createLogger({ write: () => {} }),
      watcher: w.watcher,
      retries: 0,
      clock,
    });
    w.set(["a"], false);
    await controller.watch();
    await controller.idle();
    const before = controller.runCount("nightly");
    const tick = async (ms: number) => {
      clock.advance(ms);
      await settled();
      await controller.idle();
    };
    await tick(new Date(2026, 0, 1, 10, 15).getTime() - start - 1);
    assert.equal(controller.runCount("nightly"), before, "nothing before 10:15");
    await tick(1);
    assert.equal(controller.runCount("nightly"), before + 1, "one run at 10:15");
    await tick(30 * 60_000);
    assert.equal(controller.runCount("nightly"), before + 3, "and at 10:30 and 10:45");
    await controller.stop(100);
    await tick(60 * 60_000);
    assert.equal(controller.runCount("nightly"), before + 3, "none after the stop");
  });
});
