import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdir, readdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { constructId } from "../../src/index.ts";
import { TfcClient } from "../../src/tfc/client.ts";
import { http } from "../support/api.ts";
import { startConsul, type ConsulAgent } from "../support/consul.ts";
import { firstToPrint, startCtsProcess, type CtsProcess } from "../support/cts-process.ts";
import { FIXTURE_TASKS, PUBLIC_API, tempDir, waitFor } from "../support/cts.ts";
import { freePort } from "../support/ports.ts";
import { startTfcServer, type TfcTestServer } from "../support/tfc-server/index.ts";

/** The files GuardedPool writes for these instance ids. */
const named = (...ids: string[]) => ids.map((id) => `${constructId(id)}.txt`).sort();

/**
 * A plan held on the Terraform Cloud driver outlives its leader: the hold (with the run id as its
 * ref) is in Consul KV, the run waits in Terraform Cloud, and the new leader confirms that very run
 * when it is approved. Two cts processes, the TFE-API test server running OpenTofu, a real Consul.
 */
describe("plan guards on the Terraform Cloud driver under high availability: a held run survives a failover", () => {
  let server: TfcTestServer;
  let consul: ConsulAgent;
  let tmp: { dir: string; cleanup(): Promise<void> };
  let out: string;
  const procs = new Map<string, CtsProcess>();
  const urls = new Map<string, string>();
  let admin: TfcClient;
  const files = async () => (await readdir(out).catch(() => [] as string[])).sort();
  const runsOf = async () => {
    const ws = await admin.workspaces.read(server.organization, "hag-pool");
    return ws ? admin.runs.listRecent(ws.id, 50) : [];
  };

  before(async () => {
    [server, consul, tmp] = await Promise.all([startTfcServer(), startConsul({ extraConfig: 'session_ttl_min = "1s"' }), tempDir("cts-tfc-ha-guards-")]);
    admin = new TfcClient({ hostname: server.url, token: server.token });
    out = join(tmp.dir, "out");
    for (const i of [1, 2, 3]) await consul.register({ Name: "web", ID: `web-${i}`, Address: `10.0.0.${i}`, Port: 80 });
    await writeFile(join(tmp.dir, "token"), server.token, { mode: 0o600 });
    for (const id of ["tfc-a", "tfc-b"]) {
      const dir = join(tmp.dir, id);
      await mkdir(dir, { recursive: true });
      const port = await freePort();
      urls.set(id, `http://127.0.0.1:${port}`);
      const file = join(dir, "cts.config.ts");
      await writeFile(
        file,
        `import { defineConfig } from ${JSON.stringify(PUBLIC_API)};
import { GuardedPool } from ${JSON.stringify(FIXTURE_TASKS)};
export default defineConfig({
  id: ${JSON.stringify(id)},
  consul: { address: ${JSON.stringify(consul.address)} },
  driver: { terraformCloud: { hostname: ${JSON.stringify(server.url)}, organization: ${JSON.stringify(server.organization)}, token: { file: ${JSON.stringify(join(tmp.dir, "token"))} }, workspaces: { prefix: "hag-" }, pollInterval: "200ms" } },
  api: { port: ${port} },
  highAvailability: { cluster: { name: "tfc-ha-guards", storage: { sessionTtl: "3s" } } },
  tasks: [new GuardedPool("pool", ${JSON.stringify(out)}, { maxDestroy: 0 })],
});
`,
      );
      procs.set(id, startCtsProcess(file, { name: id }));
    }
  });
  after(async () => {
    await Promise.all([...procs.values()].map((p) => p.terminate(15_000)));
    admin?.close();
    await Promise.all([server?.stop(), consul?.stop()]);
    await tmp?.cleanup();
  });

  it("the leader holds the run; after it stops, the new leader shows the hold and approving there confirms the same run", async () => {
    const first = (await firstToPrint([...procs.values()], /ha: acquired leadership lock: id=/, 120_000)).p;
    await waitFor(async () => (await files()).length === 3, 240_000, "the first leader's apply");
    await consul.deregister("web-2");
    await consul.deregister("web-3");
    const firstUrl = urls.get(first.name)!;
    const held = await waitFor(async () => {
      const h = (await http(firstUrl, "GET", "/v1/status/tasks/pool")).body?.pool?.held;
      return h?.changes?.destroy === 2 ? h : undefined;
    }, 180_000, "the leader to hold the plan destroying 2");
    assert.deepEqual(held.reasons, ["the plan destroys 2 resources, more than maxDestroy (0)"]);
    const [waiting] = await runsOf();
    assert.equal(waiting!.actions.isConfirmable, true, `the held run ${waiting!.id} waits for confirmation`);

    const next = [...procs.values()].find((p) => p !== first)!;
    const from = next.mark();
    await first.terminate(15_000);
    await next.waitForLine(/ha: acquired leadership lock: id=/, 120_000, from);
    const url = urls.get(next.name)!;
    await waitFor(async () => (await http(url, "GET", "/v1/status/tasks/pool")).body?.pool?.held?.changes?.destroy === 2, 120_000, "the new leader to show the hold");
    assert.equal((await admin.runs.read(waiting!.id)).actions.isConfirmable, true, "the failover discarded nothing");
    assert.deepEqual(await files(), named("web-1", "web-2", "web-3"), "nothing applied yet");

    const res = await http(url, "POST", "/v1/tasks/pool/approve", {});
    assert.equal(res.status, 200, res.text);
    await waitFor(async () => (await admin.runs.read(waiting!.id)).status === "applied", 120_000, `run ${waiting!.id} applied`);
    assert.equal((await runsOf())[0]!.id, waiting!.id, "no new run: the held one was confirmed");
    assert.deepEqual(await files(), named("web-1"));
  });
});
