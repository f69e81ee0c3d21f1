import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { readdir } from "node:fs/promises";
import { join } from "node:path";
import { startConsul, type ConsulAgent } from "../support/consul.ts";
import { tempDir, waitFor } from "../support/cts.ts";
import { http } from "../support/api.ts";
import { freePort } from "../support/ports.ts";
import { firstToPrint, startCtsProcess, writeHaConfig, type CtsProcess } from "../support/cts-process.ts";
import { constructId } from "../../src/index.ts";

const CLUSTER = "ha-guards";

/**
 * A plan held by the leader is stored in Consul: after a failover the new leader still holds it
 * (status, same hold), and approving it there — where the plan file is not — plans again and
 * applies the same changes.
 */
describe("a held plan across a high-availability failover (real Consul, real OpenTofu, two cts processes)", () => {
  let consul: ConsulAgent;
  let tmp: { dir: string; cleanup(): Promise<void> };
  const procs = new Map<string, CtsProcess>();
  const urls = new Map<string, string>();
  let pool: string;
  let leader: CtsProcess;

  const files = async () => (await readdir(pool).catch(() => [] as string[])).sort();
  const named = (...ids: string[]) => ids.map((id) => `${constructId(id)}.txt`).sort();
  const held = async (id: string) => (await http(urls.get(id)!, "GET", "/v1/status/tasks/pool")).body.pool?.held;

  before(async () => {
    consul = await startConsul({ extraConfig: 'session_ttl_min = "1s"' });
    tmp = await tempDir("cts-ha-guards-");
    pool = join(tmp.dir, "pool");
    await consul.register({ Name: "web", ID: "web-1", Address: "10.0.0.1", Port: 80 });
    await consul.register({ Name: "web", ID: "web-2", Address: "10.0.0.2", Port: 80 });
    for (const id of ["cts-a", "cts-b"]) {
      const port = await freePort();
      urls.set(id, `http://127.0.0.1:${port}`);
      const file = await writeHaConfig(join(tmp.dir, id), {
        consulAddress: consul.address,
        id,
        cluster: CLUSTER,
        sessionTtl: "3s",
        apiPort: port,
        tasks: [`new GuardedPool("pool", ${JSON.stringify(pool)}, { maxDestroy: 0 })`],
      });
      procs.set(id, startCtsProcess(file, { name: id }));
    }
  });
  after(async () => {
    await Promise.all([...procs.values()].map((p) => p.terminate(15_000)));
    await consul?.stop();
    await tmp?.cleanup();
  });

  it("the leader holds a plan that breaks a guard and stores it in Consul KV", async () => {
    leader = (await firstToPrint([...procs.values()], /ha: acquired leadership lock: id=/, 90_000)).p;
    await waitFor(async () => JSON.stringify(await files()) === JSON.stringify(named("web-1", "web-2")), 90_000, "the leader's first apply");
    await consul.deregister("web-2");
    const h = await waitFor(() => held(leader.name), 60_000, "the leader to hold the plan");
    assert.deepEqual(h.reasons, ["the plan destroys 1 resource, more than maxDestroy (0)"]);
    const stored = await consul.api("GET", `/v1/kv/consul-terraform-sync/${CLUSTER}/state/holds/pool`);
    const record = JSON.parse(Buffer.from(stored[0].Value, "base64").toString("utf8"));
    assert.equal(record.held.task, "pool");
    assert.equal(record.held.heldAt, h.held_at);
    assert.equal(record.held.plan, undefined, "the plan itself is never stored");
  });

  it("after a failover the new leader still holds it, and approving it there applies the same changes", async () => {
    const before = await held(leader.name);
    await leader.terminate(15_000);
    const next = [...procs.values()].find((p) => p !== leader)!;
    await next.waitForLine(/ha: acquired leadership lock: id=/, 90_000);
    // Its first run finds the same inputs: still held, nothing applied.
    await next.waitForLine(/task 'pool': plan held for approval/, 90_000);
    const after = await held(next.name);
    assert.equal(after.held_at, before.held_at, "the same hold");
    assert.deepEqual(await files(), named("web-1", "web-2"));
    const res = await http(urls.get(next.name)!, "POST", "/v1/tasks/pool/approve", {});
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.approve.outcome, "applied");
    assert.deepEqual(res.body.approve.summary, { add: 0, change: 0, destroy: 1 });
    assert.deepEqual(await files(), named("web-1"));
    assert.match(next.logs(), /has no kept plan in its working directory/, "the plan file stayed with the old leader: planned again");
    assert.equal(await held(next.name), undefined);
    await waitFor(async () => ((await consul.api("GET", `/v1/kv/consul-terraform-sync/${CLUSTER}/state/holds/pool`).catch(() => undefined)) ?? undefined) === undefined, 10_000, "the stored hold to be deleted");
  });
});
