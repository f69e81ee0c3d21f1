import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";

const REAPER = fileURLToPath(new URL("../../src/terraform/reaper.ts", import.meta.url));

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

async function until(check: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * A "daemon" (a node child) starts a reaper and two process groups, one of which ignores SIGINT,
 * forgets a third, prints the pids and waits to be killed with SIGKILL.
 */
const DAEMON = `
import { spawn } from "node:child_process";
import { startReaper } from ${JSON.stringify(REAPER)};
const reaper = startReaper(500);
const polite = spawn("sleep", ["300"], { detached: true, stdio: "ignore" });
const stubborn = spawn("sh", ["-c", "trap '' INT; sleep 301; :"], { detached: true, stdio: "ignore" });
const finished = spawn("sleep", ["302"], { detached: true, stdio: "ignore" });
for (const c of [polite, stubborn, finished]) reaper.add(c.pid);
reaper.remove(finished.pid);
console.log(JSON.stringify({ polite: polite.pid, stubborn: stubborn.pid, finished: finished.pid }));
setInterval(() => {}, 1000);
`;

describe("process reaper", () => {
  it("kills every registered process group once its daemon dies by SIGKILL, and leaves forgotten ones", async () => {
    const daemon = spawn(process.execPath, ["--import", "tsx", "--input-type=module", "-e", DAEMON], { stdio: ["ignore", "pipe", "inherit"] });
    const pids = await new Promise<{ polite: number; stubborn: number; finished: number }>((resolve, reject) => {
      let out = "";
      daemon.stdout.on("data", (d: Buffer) => {
        out += d.toString();
        if (out.includes("\n")) resolve(JSON.parse(out));
      });
      daemon.once("exit", () => reject(new Error(`daemon exited early: ${out}`)));
    });
    try {
      assert.ok(alive(pids.polite) && alive(pids.stubborn));
      daemon.kill("SIGKILL");
      await until(() => !alive(pids.polite), 10_000, "the SIGINT-able group to go");
      await until(() => !alive(pids.stubborn), 10_000, "the group that ignores SIGINT to be SIGKILLed");
      assert.ok(alive(pids.finished), "a group the daemon forgot is not touched");
    } finally {
      for (const pid of Object.values(pids)) {
        try {
          process.kill(-pid, "SIGKILL");
        } catch {
          /* gone */
        }
      }
    }
  });
});
