import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { errorKinds, errorSamples } from "../../bench/chaos/lib/observe.ts";
import { alive, processesUnder } from "../../bench/chaos/lib/procs.ts";

const retried = (task: string, cause: string) =>
  `2026-11-23T12:46:10.000Z [WARN] (ctrl) task '${task}': attempt 1 failed, retrying in 1043 ms: Task '${task}': \`tofu apply\` failed (exit 1): ${cause}. Fix the task's configuration or run \`cts inspect ${task}\`. task=${task}`;

describe("chaos harness: reading the daemon's log", () => {
  it("groups failed attempts of different tasks by their cause", () => {
    const lines = [
      retried("t6", "could not read package directory: open .terraform/providers/registry.opentofu.org/hashicorp/local/2.9.0/linux_amd64: no such file or directory"),
      retried("t7", "could not read package directory: open .terraform/providers/registry.opentofu.org/hashicorp/local/2.9.0/linux_amd64: no such file or directory"),
      "2026-11-23T12:46:11.000Z [ERROR] (ctrl) task 'slow': Task 'slow': `tofu apply` failed (exit 1): error loading state: failed to lock state in Consul: Lock Info:",
      "2026-11-23T12:46:12.000Z [INFO] (ctrl) task 't8': applied add=1 change=0 destroy=0",
    ];
    assert.deepEqual(errorKinds(lines), ["2× apply: could not read package directory: open <provider dir>: no such file or directory.", "1× apply: error loading state: failed to lock state in Consul: Lock Info:"]);
    assert.equal(errorSamples(lines).length, 2);
  });
});

describe("chaos harness: finding processes a scenario left", () => {
  it("finds a process by its working dir and not one elsewhere", async () => {
    const dir = await mkdtemp(join(tmpdir(), "cts-chaos-unit-"));
    const inside = spawn("sleep", ["30"], { cwd: dir, stdio: "ignore" });
    const outside = spawn("sleep", ["30"], { cwd: tmpdir(), stdio: "ignore" });
    try {
      const found = processesUnder(dir);
      assert.deepEqual(found.map((p) => [p.pid, p.kind]), [[inside.pid, "local-exec"]]);
      assert.equal(alive(inside.pid!), true);
    } finally {
      inside.kill("SIGKILL");
      outside.kill("SIGKILL");
      await rm(dir, { recursive: true, force: true });
    }
  });
});
