import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { MemoryReserve, hostReclaimsFreeMemory } from "../../src/terraform/memory-reserve.ts";
import { createTerraformDriver } from "../../src/terraform/driver.ts";
import { tempDir, waitFor } from "../support/cts.ts";
import { tools } from "../support/tools.ts";

/** Resident memory of a process in MB, or undefined once it is gone. */
async function residentMb(pid: number): Promise<number | undefined> {
  const status = await readFile(`/proc/${pid}/status`, "utf8").catch(() => undefined);
  const kb = status ? /VmRSS:\s+(\d+) kB/.exec(status)?.[1] : undefined;
  return kb === undefined ? undefined : Number(kb) / 1024;
}
const alive = async (pid: number) => (await residentMb(pid)) !== undefined;

/**
 * Issue #34: on a VM that gives free memory back to its host, a process started after a quiet
 * spell faults its new memory back in (about 200 ms on a `tofu apply`). The reserve holds memory
 * (a real `dd`) through quiet spells and lets it go the moment an operation starts.
 */
describe("the memory reserve for Terraform's start (a real dd)", () => {
  // The reserve's timer and process never keep a process alive (a daemon's do not need to): the test's own wait does.
  let keepAlive: NodeJS.Timeout;
  before(() => (keepAlive = setInterval(() => {}, 1_000)));
  after(() => clearInterval(keepAlive));
  it("holds its megabytes while quiet spells are kept fast, frees them when an operation starts, and takes them again after", async () => {
    const notices: string[] = [];
    const reserve = new MemoryReserve(16, { notice: (l) => notices.push(l), settleMs: 50 });
    try {
      reserve.keep(true);
      const pid = (await waitFor(() => reserve.pid, 10_000, "the reserve's process"))!;
      await waitFor(async () => ((await residentMb(pid)) ?? 0) >= 16, 10_000, "16 MB resident in it");
      await reserve.starting();
      assert.equal(await alive(pid), false, "gone (its memory free) before the operation goes on");
      assert.equal(reserve.pid, undefined);
      reserve.ended();
      const again = (await waitFor(() => reserve.pid, 10_000, "the reserve taken again"))!;
      assert.notEqual(again, pid);
      reserve.keep(false);
      await waitFor(async () => !(await alive(again)), 10_000, "let go when quiet spells need not be fast");
      assert.deepEqual(notices, []);
    } finally {
      await reserve.close();
    }
  });

  it("is not held while an operation runs, and none is left after close", async () => {
    const reserve = new MemoryReserve(8, { notice: () => {}, settleMs: 20 });
    reserve.keep(true);
    await waitFor(() => reserve.pid, 10_000, "the reserve's process");
    await reserve.starting();
    await reserve.starting();
    reserve.ended();
    await new Promise((r) => setTimeout(r, 200));
    assert.equal(reserve.pid, undefined, "one operation still runs");
    reserve.ended();
    const pid = (await waitFor(() => reserve.pid, 10_000, "taken again once none runs"))!;
    await reserve.close();
    assert.equal(await alive(pid), false);
  });

  it("says once, with the fix, when it cannot be held, and runs go on without it", async () => {
    const notices: string[] = [];
    const reserve = new MemoryReserve(8, { notice: (l) => notices.push(l), settleMs: 10, command: "/nonexistent/dd" });
    reserve.keep(true);
    await waitFor(() => notices.length === 1, 10_000, "the notice");
    assert.match(notices[0]!, /cannot be held .*Set driver\.terraform\.memoryReserveMb to false/);
    await reserve.starting();
    reserve.ended();
    await new Promise((r) => setTimeout(r, 100));
    assert.equal(notices.length, 1);
    await reserve.close();
  });

  it("the local driver frees it for an apply and holds it again after (real OpenTofu)", async () => {
    const tmp = await tempDir("cts-reserve-");
    const t = tools();
    const driver = createTerraformDriver({ binary: t.tofu, workingDir: join(tmp.dir, "work"), cliConfigFile: t.cliConfig, memoryReserveMb: 8, warmProviders: false });
    try {
      driver.keepWarm?.(true);
      const out = join(tmp.dir, "out.txt");
      const json = JSON.stringify({ terraform: { required_providers: { local: { source: "hashicorp/local" } } }, resource: { local_file: { a: { filename: out, content: "reserved" } } } });
      const before = await waitFor(() => reserveOf(), 10_000, "the reserve before the apply");
      const applied = driver.apply({ task: "reserve", json });
      await applied;
      assert.equal(await readFile(out, "utf8"), "reserved");
      assert.equal(await alive(before!), false, "the reserve held before the apply was let go for it");
      await waitFor(() => reserveOf(), 10_000, "the reserve after the apply");
    } finally {
      await driver.close();
      await tmp.cleanup();
    }
    assert.equal(reserveOf(), undefined, "none left after close");
    /** The reserve's dd, a child of this process, if one runs. */
    function reserveOf(): number | undefined {
      return (driver as unknown as { parts: { reserve?: MemoryReserve } }).parts.reserve?.pid;
    }
  });

  it("is on by default only where the host takes back free memory (a virtio balloon with free page reporting)", async () => {
    const tmp = await tempDir("cts-balloon-");
    try {
      assert.equal(hostReclaimsFreeMemory(join(tmp.dir, "none")), false, "no balloon driver");
      await writeFile(join(tmp.dir, "uevent"), "");
      assert.equal(hostReclaimsFreeMemory(tmp.dir), false, "the driver without a device");
      await mkdir(join(tmp.dir, "virtio0"));
      // Feature bits as the kernel shows them: bit 5 is free page reporting.
      await writeFile(join(tmp.dir, "virtio0", "features"), "0110000000000000000000000000000010000000\n");
      assert.equal(hostReclaimsFreeMemory(tmp.dir), false, "a balloon without free page reporting");
      await writeFile(join(tmp.dir, "virtio0", "features"), "0110010000000000000000000000000010000000\n");
      assert.equal(hostReclaimsFreeMemory(tmp.dir), true);
    } finally {
      await tmp.cleanup();
    }
  });
});
