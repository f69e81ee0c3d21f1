import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { startConsul, type ConsulAgent } from "../support/consul.ts";
import { tempDir, writeConfig } from "../support/cts.ts";
import { startCtsProcess, type CtsProcess } from "../support/cts-process.ts";

/** Two real `cts watch` processes with one id on one Consul agent. */
describe("two daemons with one id on one Consul (real cts watch, Consul)", () => {
  let consul: ConsulAgent;
  let tmp: { dir: string; cleanup(): Promise<void> };
  const procs: CtsProcess[] = [];
  const daemon = async (name: string) => {
    const dir = join(tmp.dir, name);
    await mkdir(dir);
    const config = await writeConfig(dir, { consulAddress: consul.address, extra: `id: "same-id",`, tasks: [`new MemberList("m", ${JSON.stringify(join(dir, "m.txt"))})`] });
    const p = startCtsProcess(config, { name });
    procs.push(p);
    return p;
  };

  before(async () => {
    consul = await startConsul();
    tmp = await tempDir("cts-same-id-");
    await consul.register({ Name: "web", ID: "web-1", Address: "10.0.0.1", Port: 80 });
  });
  after(async () => {
    for (const p of procs) await p.terminate(15_000);
    await consul?.stop();
    await tmp?.cleanup();
  });

  it("the second refuses to start with the fix (set a unique id); the first keeps its registration", async () => {
    const first = await daemon("first");
    await first.waitForLine(/registered service 'consul-terraform-sync' with id 'same-id'/, 120_000);
    const registered = (await consul.api("GET", "/v1/agent/service/same-id")).Port;
    const second = await daemon("second");
    const code = await second.exited();
    assert.notEqual(code, 0);
    assert.match(second.logs(), /another cts instance is registered in Consul with id 'same-id'/);
    assert.match(second.logs(), /Set a unique id in the config/);
    assert.equal((await consul.api("GET", "/v1/agent/service/same-id")).Port, registered, "the first instance's registration is untouched");
    assert.ok(first.running());
  });

  it("the same instance restarting (its old registration answers nowhere) starts", async () => {
    const first = procs[0]!;
    await first.kill9();
    const mark = first.mark();
    await first.restart();
    await first.waitForLine(/registered service 'consul-terraform-sync' with id 'same-id'/, 120_000, mark);
    assert.ok(first.running());
  });
});
