import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { startConsul, type ConsulAgent } from "../support/consul.ts";
import { tempDir, writeConfig } from "../support/cts.ts";
import { startCtsProcess, writeHaConfig, type CtsProcess } from "../support/cts-process.ts";

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

/**
 * Two real `cts watch` processes in high-availability mode with one id on one Consul, neither
 * registering itself (so the registration check cannot see them): the live session of the id tells.
 */
describe("two HA daemons with one id: the live session tells (real cts watch, Consul)", () => {
  let consul: ConsulAgent;
  let tmp: { dir: string; cleanup(): Promise<void> };
  const procs: CtsProcess[] = [];
  const daemon = async (name: string, mode: "leader" | "shared" = "leader") => {
    const dir = join(tmp.dir, name);
    const config = await writeHaConfig(dir, {
      consulAddress: consul.address,
      id: `ha-same-${mode}`,
      cluster: `same-${mode}`,
      sessionTtl: "10s",
      ...(mode === "shared" ? { mode, settle: "1s" } : {}),
      // Not registered in Consul: only the session can show the other instance.
      extra: `consul: { address: ${JSON.stringify(consul.address)}, serviceRegistration: { enabled: false } },`,
      tasks: [`new MemberList("m", ${JSON.stringify(join(dir, "m.txt"))})`],
    });
    const p = startCtsProcess(config, { name });
    procs.push(p);
    return p;
  };

  before(async () => {
    consul = await startConsul();
    tmp = await tempDir("cts-ha-same-id-");
    await consul.register({ Name: "web", ID: "web-1", Address: "10.0.0.1", Port: 80 });
  });
  after(async () => {
    for (const p of procs) await p.terminate(15_000);
    await consul?.stop();
    await tmp?.cleanup();
  });

  for (const mode of ["leader", "shared"] as const) {
    it(`${mode} mode: the second refuses to start (INSTANCE_ID_IN_USE) with the fix; the first keeps running`, async () => {
      const first = await daemon(`first-${mode}`, mode);
      await first.waitForLine(mode === "leader" ? /ha: acquired leadership lock: id=ha-same-leader/ : /ha: member 'ha-same-shared' is live/, 120_000);
      const second = await daemon(`second-${mode}`, mode);
      const code = await second.exited();
      assert.notEqual(code, 0);
      assert.match(second.logs(), new RegExp(`another cts instance with id 'ha-same-${mode}' holds a live session in Consul \\(cluster 'same-${mode}', node [^)]+\\) and answers at http://127\\.0\\.0\\.1:\\d+`));
      assert.match(second.logs(), /Set a unique id in the config/);
      assert.doesNotMatch(second.logs(), /ha: joining cluster/, "refused before joining");
      assert.ok(first.running());
      const sessions = (await consul.api("GET", "/v1/session/list")) as Array<{ Name: string }>;
      assert.equal(sessions.filter((s) => s.Name === `cts-ha:same-${mode}:ha-same-${mode}`).length, 1, "the second made no session");
    });
  }

  it("the same instance restarting while its old session is still live (killed, nothing answers at its old address) starts", async () => {
    const first = procs[0]!;
    await first.kill9();
    const sessions = (await consul.api("GET", "/v1/session/list")) as Array<{ Name: string }>;
    assert.equal(sessions.filter((s) => s.Name === "cts-ha:same-leader:ha-same-leader").length, 1, "the killed instance's session is still live");
    const mark = first.mark();
    await first.restart();
    await first.waitForLine(/ha: the live session of id 'ha-same-leader' .* no longer answers at/, 120_000, mark);
    await first.waitForLine(/ha: acquired leadership lock: id=ha-same-leader/, 120_000, mark);
    assert.ok(first.running());
  });
});
