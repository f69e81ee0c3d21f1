import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import type { Readable } from "node:stream";
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

/**
 * A "daemon" (a node child) starts a reaper and two process groups, one of which ignores SIGINT,
 * forgets a third, prints the pids and waits to be killed with SIGKILL. Each group holds one pipe
 * to the test as its fd 3 (fds 3, 4, 5 of the daemon), which the kernel closes when the last
 * process of the group is gone: the test waits for those ends instead of polling for pids. The
 * reaper itself does not inherit them (Node passes a child only the fds its stdio names).
 */
const DAEMON = `
import { spawn } from "node:child_process";
import { startReaper } from ${JSON.stringify(REAPER)};
const reaper = startReaper(500);
const group = (cmd, args, fd) => spawn(cmd, args, { detached: true, stdio: ["ignore", "ignore", "ignore", fd] });
const polite = group("sleep", ["300"], 3);
const stubborn = group("sh", ["-c", "trap '' INT; sleep 301; :"], 4);
const finished = group("sleep", ["302"], 5);
for (const c of [polite, stubborn, finished]) reaper.add(c.pid);
reaper.remove(finished.pid);
console.log(JSON.stringify({ polite: polite.pid, stubborn: stubborn.pid, finished: finished.pid }));
process.stdin.resume(); // alive until killed: the test never ends this pipe
`;

/** Resolves when every holder of the pipe's other end is gone (the pipe reads EOF). */
function gone(pipe: Readable): Promise<void> {
  pipe.resume();
  return once(pipe, "end").then(() => undefined);
}

describe("process reaper", () => {
  // Real processes: the timeout only ends a run whose reaper never kills (the pipes never close).
  it("kills every registered process group once its daemon dies by SIGKILL, and leaves forgotten ones", { timeout: 60_000 }, async () => {
    const daemon = spawn(process.execPath, ["--import", "tsx", "--input-type=module", "-e", DAEMON], { stdio: ["pipe", "pipe", "inherit", "pipe", "pipe", "pipe"] });
    const pipes = daemon.stdio as unknown as Readable[];
    const [politeGone, stubbornGone] = [gone(pipes[3]!), gone(pipes[4]!)];
    let finishedGone = false;
    void gone(pipes[5]!).then(() => (finishedGone = true));
    const pids = await new Promise<{ polite: number; stubborn: number; finished: number }>((resolve, reject) => {
      let out = "";
      daemon.stdout!.on("data", (d: Buffer) => {
        out += d.toString();
        if (out.includes("\n")) resolve(JSON.parse(out));
      });
      daemon.once("exit", () => reject(new Error(`daemon exited early: ${out}`)));
    });
    try {
      assert.ok(alive(pids.polite) && alive(pids.stubborn));
      daemon.kill("SIGKILL");
      // A pipe's end is the exit of its group's last process (kill(pid, 0) would still see a
      // zombie until init reaps it).
      await politeGone; // the SIGINT-able group
      // The group that ignores SIGINT ends only by the SIGKILL that follows the grace period.
      await stubbornGone;
      // Whatever the reaper does to its groups it has done by then: a forgotten group was spared.
      assert.equal(finishedGone, false, "a group the daemon forgot is not touched");
      assert.ok(alive(pids.finished));
    } finally {
      for (const pid of Object.values(pids)) {
        try {
          process.kill(-pid, "SIGKILL");
        } catch {
          /* gone */
        }
      }
      for (const fd of [0, 3, 4, 5]) pipes[fd]?.destroy();
    }
  });
});
