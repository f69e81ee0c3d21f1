import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { startConsul, type ConsulAgent } from "../support/consul.ts";
import { PUBLIC_API, tempDir, waitFor } from "../support/cts.ts";
import { http } from "../support/api.ts";
import { freePort } from "../support/ports.ts";
import { firstToPrint, startCtsProcess, type CtsProcess } from "../support/cts-process.ts";
import { tools } from "../support/tools.ts";
import { POOL_TOKEN } from "../fixtures/output-tasks.ts";

const OUTPUT_TASKS = fileURLToPath(new URL("../fixtures/output-tasks.ts", import.meta.url));
const CLUSTER = "ha-outputs";
const read = (p: string) => readFile(p, "utf8").catch(() => "");

/** A high-availability instance's config: one PoolOutputs task, state in Consul KV. */
async function haConfig(dir: string, o: { consulAddress: string; id: string; port: number; out: string }): Promise<string> {
  const t = tools();
  await mkdir(dir, { recursive: true });
  const file = join(dir, "cts.config.ts");
  await writeFile(
    file,
    `import { defineConfig } from ${JSON.stringify(PUBLIC_API)};
import { PoolOutputs } from ${JSON.stringify(OUTPUT_TASKS)};
export default defineConfig({
  id: ${JSON.stringify(o.id)},
  consul: { address: ${JSON.stringify(o.consulAddress)} },
  driver: { terraform: { binary: ${JSON.stringify(t.tofu)}, cliConfigFile: ${JSON.stringify(t.cliConfig)}, workingDir: ${JSON.stringify(join(dir, "sync-tasks"))}, log: true } },
  api: { port: ${o.port} },
  highAvailability: { cluster: { name: ${JSON.stringify(CLUSTER)}, storage: { sessionTtl: "3s" } } },
  history: { keep: 3 },
  tasks: [new PoolOutputs("pool", ${JSON.stringify(o.out)})],
});
`,
  );
  return file;
}

/**
 * Under high availability the outputs and the run history live in Consul KV (KvTaskState): a
 * follower shows the leader's, and a new leader goes on from them after the old one is killed.
 */
describe("outputs and run history under high availability (real Consul, real OpenTofu, two cts processes)", () => {
  let consul: ConsulAgent;
  let tmp: { dir: string; cleanup(): Promise<void> };
  const procs: CtsProcess[] = [];
  const urls = new Map<string, string>();
  let out: string;
  let leader: CtsProcess;
  let follower: CtsProcess;
  const get = (p: CtsProcess, path: string) => http(urls.get(p.name)!, "GET", path);

  before(async () => {
    consul = await startConsul({ extraConfig: 'session_ttl_min = "1s"' });
    tmp = await tempDir("cts-ha-outputs-");
    out = join(tmp.dir, "pool.txt");
    await consul.register({ Name: "web", ID: "web-1", Address: "10.0.0.1", Port: 80 });
    for (const id of ["cts-a", "cts-b"]) {
      const port = await freePort();
      urls.set(id, `http://127.0.0.1:${port}`);
      procs.push(startCtsProcess(await haConfig(join(tmp.dir, id), { consulAddress: consul.address, id, port, out }), { name: id }));
    }
    leader = (await firstToPrint(procs, /ha: acquired leadership lock: id=/, 90_000)).p;
    follower = procs.find((p) => p !== leader)!;
    await waitFor(async () => (await read(out)) === "web-1 10.0.0.1:80\n", 90_000, "the leader's first apply");
    await follower.waitForLine(/api: listening on/, 30_000);
  });
  after(async () => {
    await Promise.all(procs.map((p) => p.terminate(15_000)));
    await consul?.stop();
    await tmp?.cleanup();
  });

  it("keeps the leader's outputs and runs in Consul KV, one key per run, the sensitive value redacted", async () => {
    const prefix = `consul-terraform-sync/${CLUSTER}/state/`;
    const keys = await waitFor(async () => {
      const list: string[] = (await consul.api("GET", `/v1/kv/${prefix}?keys`).catch(() => [])) ?? [];
      return list.includes(`${prefix}outputs/pool`) && list.some((k) => k.startsWith(`${prefix}runs/pool/`)) ? list : undefined;
    }, 30_000, "the outputs and the first run in KV");
    assert.equal(keys!.filter((k) => k.startsWith(`${prefix}runs/pool/`)).length, 1);
    const entries: Array<{ Key: string; Value: string }> = await consul.api("GET", `/v1/kv/${prefix}?recurse`);
    for (const e of entries) assert.ok(!Buffer.from(e.Value ?? "", "base64").toString("utf8").includes(POOL_TOKEN), e.Key);
    const outputs = JSON.parse(Buffer.from(entries.find((e) => e.Key === `${prefix}outputs/pool`)!.Value, "base64").toString("utf8"));
    assert.equal(outputs.outputs.member_count.value, 1);
    assert.equal(outputs.outputs.api_token.value, "(sensitive)");
  });

  it("a follower answers the leader's outputs and runs from the stored state", async () => {
    await consul.register({ Name: "web", ID: "web-2", Address: "10.0.0.2", Port: 80 });
    await waitFor(async () => (await get(leader, "/v1/tasks/pool/runs")).body.total === 2, 60_000, "the leader's second run");
    const onLeader = (await get(leader, "/v1/tasks/pool/runs")).body.runs;
    const mirrored = await waitFor(async () => {
      const res = await get(follower, "/v1/tasks/pool/runs");
      return res.body.total === 2 ? res.body.runs : undefined;
    }, 30_000, "the follower to mirror both runs");
    assert.deepEqual(mirrored, onLeader);
    const status = await waitFor(async () => {
      const s = (await get(follower, "/v1/status/tasks/pool")).body.pool;
      return s.outputs?.values.member_count.value === 2 ? s : undefined;
    }, 30_000, "the follower to mirror the second apply's outputs");
    assert.equal(status.outputs.values.api_token.value, "(sensitive)");
  });

  it("a new leader goes on from them after the old one is killed, and prunes to the retention", async () => {
    const before = (await get(follower, "/v1/tasks/pool/runs")).body.runs;
    await leader.kill9();
    await follower.waitForLine(/ha: acquired leadership lock: id=/, 90_000);
    // Its own first run as leader ("start"): the history goes on from the old leader's, pruned to 3.
    const runs = await waitFor(async () => {
      const res = await get(follower, "/v1/tasks/pool/runs");
      return res.body.runs[0]?.trigger === "start" && res.body.runs[0].id !== before[0].id ? res.body : undefined;
    }, 90_000, "the new leader's first run");
    assert.equal(runs.total, 3);
    assert.deepEqual(runs.runs.slice(1).map((r: { id: string }) => r.id), before.map((r: { id: string }) => r.id));
    const outputs = (await get(follower, "/v1/tasks/pool/outputs")).body.outputs;
    assert.equal(outputs.values.member_count.value, 2);
    const prefix = `consul-terraform-sync/${CLUSTER}/state/runs/pool/`;
    await waitFor(async () => ((await consul.api("GET", `/v1/kv/${prefix}?keys`).catch(() => [])) ?? []).length === 3, 30_000, "3 run keys in KV");
  });
});
