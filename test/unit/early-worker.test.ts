import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { runsDaemon } from "../../src/cli/early-start.ts";
import { dropEarlyWorker, startWorkerEarly, takeEarlyWorker } from "../../src/synth/worker-start.ts";
import { workerSynthesizer } from "../../src/synth/synthesizer.ts";

const fixture = (name: string) => fileURLToPath(new URL(`../fixtures/configs/${name}`, import.meta.url));
const argv = (...args: string[]) => ["node", "cts", ...args];

describe("the synthesis worker started before the CLI loads", () => {
  it("starts only for a command that runs the daemon", () => {
    assert.equal(runsDaemon(argv("watch", "--config", "c.ts")), true);
    assert.equal(runsDaemon(argv("start", "-config-file", "c.hcl")), true);
    assert.equal(runsDaemon(argv("-config-file", "c.hcl")), true, "CTS's bare form of start");
    for (const other of [argv("start", "-config-file", "c.hcl", "-once"), argv("start", "--config-dir", "d", "--inspect"), argv("start", "-inspect-task=web"), argv("once"), argv("synth"), argv("task", "list"), argv("watch", "--help"), argv()])
      assert.equal(runsDaemon(other), false, other.slice(2).join(" "));
  });

  it("is taken once, by the first worker synthesizer, which loads the config in it", async () => {
    startWorkerEarly();
    const early = takeEarlyWorker();
    assert.ok(early, "a started worker is handed over");
    assert.equal(takeEarlyWorker(), undefined, "only once");
    await early.terminate();

    startWorkerEarly();
    const synthesizer = workerSynthesizer();
    try {
      const described = await synthesizer.describe(fixture("valid.ts"));
      assert.deepEqual(described.config.tasks.map((t) => (t.kind === "class" ? t.options.name : t.spec.name)), ["members", "api-members"]);
      assert.equal(synthesizer.stats().started, 1);
      assert.equal(takeEarlyWorker(), undefined, "the synthesizer took the early worker");
    } finally {
      await synthesizer.close();
      await dropEarlyWorker();
    }
  });

  it("is not handed over once it has ended", async () => {
    await startWorkerEarly().terminate();
    assert.equal(takeEarlyWorker(), undefined, "the synthesizer starts a worker of its own instead");
  });
});
