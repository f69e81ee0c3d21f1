import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { lineSplitter, runProcess } from "../../src/terraform/process.ts";

const collect = () => {
  const lines: string[] = [];
  const s = lineSplitter((l) => lines.push(l));
  return { lines, s };
};

describe("line splitter", () => {
  it("splits chunks into lines however the chunks fall, keeping blank lines and dropping \\r", () => {
    const { lines, s } = collect();
    for (const chunk of ["a", "b\n\nc\r", "\nd\n", "e"]) s.push(chunk);
    s.end();
    assert.deepEqual(lines, ["ab", "", "c", "d", "e"]);
  });

  it("adds no empty line for a final newline", () => {
    const { lines, s } = collect();
    s.push("one\ntwo\n");
    s.end();
    assert.deepEqual(lines, ["one", "two"]);
  });
});

describe("runProcess", () => {
  const base = (over: Partial<Parameters<typeof runProcess>[2]> = {}) => ({
    cwd: process.cwd(),
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin" },
    signal: new AbortController().signal,
    killGraceMs: 1000,
    onStdout: () => {},
    onStderr: () => {},
    ...over,
  });

  it("delivers every stdout and stderr line before it resolves, with the exit code and only the env given", async () => {
    const out: string[] = [];
    const err: string[] = [];
    const groups: string[] = [];
    const res = await runProcess("/bin/sh", ["-c", 'printf "x\\n\\ny=$CTS_T\\nlast"; echo oops >&2; exit 3'], base({
      env: { PATH: process.env.PATH ?? "", CTS_T: "1" },
      onStdout: (l) => out.push(l),
      onStderr: (l) => err.push(l),
      track: { add: (g) => groups.push(`+${g > 0}`), remove: (g) => groups.push(`-${g > 0}`) },
    }));
    assert.deepEqual(res, { exitCode: 3, aborted: false });
    assert.deepEqual(out, ["x", "", "y=1", "last"]);
    assert.deepEqual(err, ["oops"]);
    assert.deepEqual(groups, ["+true", "-true"]);
  });

  it("reports a binary that does not exist as a start failure, not an exit code", async () => {
    const res = await runProcess("/nonexistent/tofu", ["version"], base());
    assert.equal(res.exitCode, undefined);
    assert.match(String(res.spawnError?.message), /ENOENT/);
  });

  it("ends the whole process group when aborted", async () => {
    const ac = new AbortController();
    const out: string[] = [];
    // The shell ignores SIGINT, so only the SIGKILL after the grace period ends it and its sleep.
    const done = runProcess("/bin/sh", ["-c", "trap '' INT; sleep 30 & echo $!; wait"], base({ signal: ac.signal, killGraceMs: 100, onStdout: (l) => (out.push(l), ac.abort()) }));
    const res = await done;
    assert.equal(res.aborted, true);
    assert.equal(res.exitCode, undefined);
    const sleeper = Number(out[0]);
    // Gone, or a zombie until init reaps it: either way no longer running.
    const state = () => {
      try {
        return readFileSync(`/proc/${sleeper}/stat`, "utf8").split(") ")[1]![0];
      } catch {
        return "gone";
      }
    };
    assert.ok(["gone", "Z", "X"].includes(state()!), `the group's sleep is still running (state ${state()})`);
  });

  // A shell that reports SIGINT and keeps running, as Terraform does while it finishes and saves state.
  const interruptible = "trap 'echo got-int' INT; echo started; sleep 30 & wait; sleep 30 & wait";

  it("kills a fenced run at once, with no SIGINT, when its lock may already be someone else's", async () => {
    const ac = new AbortController();
    const out: string[] = [];
    const res = await runProcess("/bin/sh", ["-c", interruptible], base({
      signal: ac.signal,
      killGraceMs: 60_000,
      onStdout: (l) => {
        out.push(l);
        if (l === "started") ac.abort({ fenced: true, killBy: Number.NEGATIVE_INFINITY });
      },
    }));
    assert.equal(res.aborted, true);
    assert.equal(res.exitCode, undefined);
    assert.deepEqual(out, ["started"], "no graceful stop: SIGKILL only");
  });

});
