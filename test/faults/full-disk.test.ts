import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdir, open, readFile, rm } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import { startConsul, type ConsulAgent } from "../support/consul.ts";
import { tempDir, waitFor, writeConfig } from "../support/cts.ts";
import { startCtsProcess, type CtsProcess } from "../support/cts-process.ts";

const run = promisify(execFile);
const read = (p: string) => readFile(p, "utf8").catch(() => "");
const getJson = async (url: string) => (await fetch(url)).json() as Promise<any>;

/**
 * Mounts a real tmpfs of `size` at `dir`. Needs root (`mount -t tmpfs`); without it the test fails
 * and says why — it never skips: a full disk is one of the bad days cts promises to survive.
 */
async function mountTmpfs(dir: string, size: string): Promise<void> {
  try {
    await run("mount", ["-t", "tmpfs", "-o", `size=${size},mode=0755`, "tmpfs", dir]);
  } catch (err) {
    throw new Error(
      `this test needs a real tmpfs at ${dir} and could not mount one (${(err as Error).message.trim()}). Run the fault tests as root (a container with CAP_SYS_ADMIN), where \`mount -t tmpfs\` works.`,
    );
  }
}

/** Writes zeros into `file` until the filesystem refuses (ENOSPC): every block of it is taken. */
async function fillUp(file: string): Promise<number> {
  const fh = await open(file, "w");
  let written = 0;
  try {
    for (const size of [1 << 20, 4096, 1]) {
      const chunk = Buffer.alloc(size);
      for (;;) {
        try {
          written += (await fh.write(chunk)).bytesWritten;
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code !== "ENOSPC") throw err;
          break;
        }
      }
    }
  } finally {
    await fh.close().catch(() => undefined);
  }
  return written;
}

interface Event {
  success: boolean;
  error: { message: string } | null;
}

/**
 * A full disk (issue #36 item 8): the working dir is a real tmpfs, and it fills up while the daemon
 * runs. The run that comes next fails with WORKING_DIR_UNUSABLE naming the folder and the fix
 * (free space), the daemon keeps running, and once space is freed the next change applies.
 * Real cts watch, OpenTofu and Consul.
 */
describe("a working dir on a tmpfs that fills up (real cts watch, OpenTofu, Consul)", () => {
  let consul: ConsulAgent;
  let tmp: { dir: string; cleanup(): Promise<void> };
  let cts: CtsProcess;
  let url = "";
  let work: string;
  let mounted = false;
  let members: string;

  before(async () => {
    consul = await startConsul();
    tmp = await tempDir("cts-full-disk-");
    work = join(tmp.dir, "sync-tasks");
    members = join(tmp.dir, "members.txt");
    await mkdir(work);
    await mountTmpfs(work, "64m");
    mounted = true;
    await consul.register({ Name: "web", ID: "web-1", Address: "10.0.0.1", Port: 80 });
    // writeConfig puts the working dir at <dir>/sync-tasks: the tmpfs.
    const config = await writeConfig(tmp.dir, { consulAddress: consul.address, tasks: [`new MemberList("web", ${JSON.stringify(members)})`] });
    cts = startCtsProcess(config, { name: "cts" });
    url = (await cts.waitForLine(/api: listening on (\S+)/, 120_000)).line.match(/listening on (\S+)/)![1]!;
    await waitFor(async () => (await read(members)) === "web-1 10.0.0.1:80\n", 120_000, "the first apply");
  });
  after(async () => {
    await cts?.terminate(15_000);
    await consul?.stop();
    if (mounted) await run("umount", [work]);
    await tmp?.cleanup();
  });

  it("fails the run with WORKING_DIR_UNUSABLE naming the folder and 'free space', keeps running, and applies the next change once space is freed", async () => {
    const filler = join(work, "filler");
    const taken = await fillUp(filler);
    assert.ok(taken > 0, "the tmpfs took some bytes before it was full");

    const mark = cts.mark();
    await consul.register({ Name: "web", ID: "web-2", Address: "10.0.0.2", Port: 80 });
    const failed = await waitFor(async () => {
      const events = (await getJson(`${url}/v1/status/tasks/web?include=events`)).web.events as Event[];
      return events.find((e) => !e.success);
    }, 180_000, "the failed run's event");
    const message = failed!.error!.message;
    assert.match(message, /no space left on device|ENOSPC/i);
    // The folder it could not write (the task state's, or the task's own, both on the tmpfs) and the fix.
    assert.match(message, new RegExp(`cannot (write|create) ${work.replace(/[/.]/g, "\\$&")}/\\S+ \\(ENOSPC`));
    assert.match(message, new RegExp(`free space on the filesystem that holds ${work.replace(/[/.]/g, "\\$&")}(/\\S*)? \\(df -h `));
    assert.match(cts.logs().slice(mark), /\(WORKING_DIR_UNUSABLE\)/, "the catalogued code");
    assert.equal((await read(members)), "web-1 10.0.0.1:80\n", "nothing was applied");

    // The daemon keeps running and answering.
    assert.ok(cts.running());
    assert.equal((await fetch(`${url}/v1/status`)).status, 200);

    // Space freed: the next change applies (both instances).
    await rm(filler);
    await consul.register({ Name: "web", ID: "web-3", Address: "10.0.0.3", Port: 80 });
    await waitFor(async () => (await read(members)) === "web-1 10.0.0.1:80\nweb-2 10.0.0.2:80\nweb-3 10.0.0.3:80\n", 180_000, "the next change to apply");
    // The file is written inside the apply; the run's event comes after it (and after any retry of the failed run).
    const last = await waitFor(async () => {
      const newest = ((await getJson(`${url}/v1/status/tasks/web?include=events`)).web.events as Event[])[0];
      return newest?.success ? newest : undefined;
    }, 60_000, "the successful run's event");
    assert.equal(last?.success, true);
  });
});
