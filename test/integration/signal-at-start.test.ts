import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { startConsul, type ConsulAgent } from "../support/consul.ts";
import { startCtsProcess } from "../support/cts-process.ts";
import { tempDir, writeConfig } from "../support/cts.ts";

/**
 * SIGTERM while `cts watch` is still starting (its API up, its first runs being queued): the
 * daemon holds the signal and stops cleanly once it has started, exit 0 and "stopped", instead
 * of the process ending on the signal with its children left behind.
 */
describe("a signal while the daemon starts (real cts watch, Consul, OpenTofu)", () => {
  let consul: ConsulAgent;
  let tmp: { dir: string; cleanup(): Promise<void> };
  before(async () => {
    consul = await startConsul();
    tmp = await tempDir("cts-signal-");
    await consul.register({ Name: "web", ID: "web-1", Address: "10.0.0.1", Port: 80 });
  });
  after(async () => {
    await consul?.stop();
    await tmp?.cleanup();
  });

  it("SIGTERM right after the API is up: the daemon stops gracefully, exit 0", async () => {
    const file = await writeConfig(tmp.dir, { consulAddress: consul.address, tasks: [`new MemberList("web", ${JSON.stringify(join(tmp.dir, "web.txt"))})`] });
    const cts = startCtsProcess(file);
    await cts.waitForLine(/api: listening on/, 120_000);
    const code = await cts.terminate(60_000);
    assert.equal(code, 0, cts.logs());
    assert.match(cts.logs(), /received SIGTERM, stopping/);
    assert.match(cts.logs(), /\[INFO\] stopped/);
  });
});
