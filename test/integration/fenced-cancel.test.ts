import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { runProcess } from "../../src/terraform/process.ts";

// A shell that reports SIGINT and keeps running, as Terraform does while it finishes and saves state.
const interruptible = "trap 'echo got-int' INT; echo started; sleep 30 & wait; sleep 30 & wait";

/** The kill deadline of a fenced run (src/driver/types.ts FencedCancel) on a real process group. */
describe("a fenced run's command (real process group)", () => {
  it("gets a graceful stop only until its deadline, then is killed", async () => {
    const ac = new AbortController();
    const out: string[] = [];
    const res = await runProcess("/bin/sh", ["-c", interruptible], {
      cwd: process.cwd(),
      env: { PATH: process.env.PATH ?? "/usr/bin:/bin" },
      signal: ac.signal,
      // Without the deadline the shell would outlive this test's time limit.
      killGraceMs: 600_000,
      onStdout: (l) => {
        out.push(l);
        if (l === "started") ac.abort({ fenced: true, killBy: performance.now() + 300 });
      },
      onStderr: () => {},
    });
    assert.equal(res.aborted, true);
    assert.equal(res.exitCode, undefined);
    assert.deepEqual(out, ["started", "got-int"], "SIGINT first, then SIGKILL at the deadline");
  });
});
