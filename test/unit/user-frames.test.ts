import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { dirname, join } from "node:path";
import { Testing } from "../../src/testing.ts";
import { CtsError } from "../../src/errors/cts-error.ts";
import { serializeError } from "../../src/synth/synthesizer.ts";
import { userCode, userCodeFields, userStackText } from "../../src/errors/user-frames.ts";
import { ThrowsInSynth } from "../fixtures/throwing-tasks.ts";

const ROOT = dirname(dirname(dirname(fileURLToPath(import.meta.url))));

describe("the user's frames of an error", () => {
  it("folds away cts's own src and dist, node_modules and Node's frames, and drops tsx's namespace query", () => {
    const err = new Error("boom");
    err.stack = [
      "TypeError: boom",
      `    at ownerOf (file://${ROOT}/proj/tasks/web.ts?tsx-namespace=cts-config-1:15:31)`,
      `    at WebTask.synthesize (${ROOT}/proj/tasks/web.ts:10:37)`,
      `    at synthesizeTask (${join(ROOT, "src/synth/synthesize.ts")}:70:12)`,
      `    at Object.f (${join(ROOT, "dist/synth/synthesize.js")}:70:12)`,
      `    at x (/home/u/proj/node_modules/cdktf/lib/app.js:1:2)`,
      "    at process.processTicksAndRejections (node:internal/process/task_queues:95:5)",
      `    at ${ROOT}/proj/cts.config.ts:3:1`,
    ].join("\n");
    assert.deepEqual(userCode(err, 3, ROOT), {
      at: "proj/tasks/web.ts:15:31",
      frames: ["ownerOf (proj/tasks/web.ts:15:31)", "WebTask.synthesize (proj/tasks/web.ts:10:37)", "proj/cts.config.ts:3:1"],
    });
  });

  it("looks into the cause when the error itself was thrown by cts, and is undefined when no frame is the user's", () => {
    const inner = new Error("inner");
    inner.stack = `Error: inner\n    at f (/elsewhere/task.ts:2:3)`;
    const outer = new Error("outer", { cause: inner });
    outer.stack = `Error: outer\n    at g (${join(ROOT, "src/x.ts")}:1:1)`;
    assert.equal(userCode(outer, 3, ROOT)?.at, "/elsewhere/task.ts:2:3");
    inner.stack = `Error: inner\n    at node:internal/x:1:1`;
    assert.equal(userCode(outer, 3, ROOT), undefined);
  });

  it("a task whose synthesize() throws names the task file, line and column (source-mapped), and the frames cross the worker as data", () => {
    let thrown: unknown;
    try {
      Testing.synthTaskResult(new ThrowsInSynth("owners"), { services: [{ name: "web", id: "web-1" }] as never });
    } catch (err) {
      thrown = err;
    }
    assert.ok(thrown instanceof CtsError);
    assert.equal(thrown.code, "TASK_SYNTH_FAILED");
    assert.match(thrown.message, /synthesize\(\) threw: Cannot read properties of undefined \(reading 'trim'\) at test\/fixtures\/throwing-tasks\.ts:15:33/);
    // The third frame is this test, the caller: user code too.
    const { at, stack } = userCodeFields(thrown);
    assert.equal(at, "test/fixtures/throwing-tasks.ts:15:33");
    assert.deepEqual(stack?.slice(0, 2), ["ownerOf (test/fixtures/throwing-tasks.ts:15:33)", "ThrowsInSynth.synthesize (test/fixtures/throwing-tasks.ts:10:37)"]);
    assert.ok(userStackText(thrown).startsWith("\n    at ownerOf (test/fixtures/throwing-tasks.ts:15:33)\n    at ThrowsInSynth.synthesize (test/fixtures/throwing-tasks.ts:10:37)"));
    const sent = structuredClone(serializeError(thrown));
    assert.equal(sent.detail?.at, "test/fixtures/throwing-tasks.ts:15:33");
  });
});
