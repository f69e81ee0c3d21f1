import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { TfcClient } from "../../src/tfc/client.ts";
import { http } from "../support/api.ts";
import { startConsul, type ConsulAgent } from "../support/consul.ts";
import { firstToPrint, startCtsProcess, type CtsProcess } from "../support/cts-process.ts";
import { FIXTURE_TASKS, PUBLIC_API, tempDir, waitFor } from "../support/cts.ts";
import { freePort } from "../support/ports.ts";
import { startTfcServer, type TfcTestServer } from "../support/tfc-server/index.ts";

const read = (p: string) => readFile(p, "utf8").catch(() => "");

describe("high availability on the Terraform Cloud driver: two cts processes, one workspace per task", () => {
  let server: TfcTestServer;
  let consul: ConsulAgent;
  let tmp: { dir: string; cleanup(): Promise<void> };
  let members: string;
  const procs = new Map<string, CtsProcess>();
  const urls = new Map<string, string>();
  let admin: TfcClient;

  const runsOf = () => server.requests.filter((r) => r.method === "POST" && r.path === "/api/v2/runs").length;
  const uploadsOf = () => server.requests.filter((r) => r.method === "POST" && r.path.endsWith("/configuration-versions")).length;

  before(async () => {
    [server, consul, tmp] = await Promise.all([startTfcServer(), startConsul({ extraConfig: 'session_ttl_min = "1s"' }), tempDir("cts-tfc-ha-")]);
    admin = new TfcClient({ hostname: server.url, token: server.token });
    members = join(tmp.dir, "members.txt");
    await consul.register({ Name: "web", ID: "web-1", Address: "10.0.0.1", Port: 80 });
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
import { MemberList } from ${JSON.stringify(FIXTURE_TASKS)};
export default defineConfig({
  id: ${JSON.stringify(id)},
  consul: { address: ${JSON.stringify(consul.address)} },
  driver: { terraformCloud: { hostname: ${JSON.stringify(server.url)}, organization: ${JSON.stringify(server.organization)}, token: { file: ${JSON.stringify(join(tmp.dir, "token"))} }, workspaces: { prefix: "ha-" } } },
  api: { port: ${port} },
  highAvailability: { cluster: { name: "tfc-ha", storage: { sessionTtl: "3s" } } },
  tasks: [new MemberList("members", ${JSON.stringify(members)})],
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

  it("the leader applies in the workspace; after it stops, the new leader skips the unchanged task (no upload, no run) and applies the next change with exactly one run", async () => {
    const first = (await firstToPrint([...procs.values()], /ha: acquired leadership lock: id=/, 120_000)).p;
    await waitFor(async () => (await read(members)).includes("web-1"), 120_000, "the first leader's apply");
    const ws = (await admin.workspaces.read(server.organization, "ha-members"))!;
    assert.deepEqual(ws.tags, ["source:cts"]);
    // What the leader applied is in the stored state (a graceful stop flushes it anyway; read it to see it is there).
    // While the run is under way the record holds only the count being applied; the key comes after it.
    const stored = await waitFor(async () => {
      const kv = await consul.api("GET", "/v1/kv/consul-terraform-sync/tfc-ha/state/applied/members").catch(() => undefined);
      const record = Array.isArray(kv) && kv[0]?.Value ? JSON.parse(Buffer.from(kv[0].Value, "base64").toString("utf8")) : undefined;
      return record?.key ? record : false;
    }, 60_000, "the applied record (with its key) in Consul KV");
    assert.equal(typeof stored.key, "string");
    assert.equal(stored.count, 1);
    const runsBefore = runsOf();
    const uploadsBefore = uploadsOf();
    const next = [...procs.values()].find((p) => p !== first)!;
    const from = next.mark();
    await first.terminate(15_000);
    await next.waitForLine(/ha: acquired leadership lock: id=/, 120_000, from);
    // The new leader's first pass: the task's inputs equal what the old leader applied.
    await next.waitForLine(/task 'members': no-op/, 120_000, from);
    assert.equal(runsOf(), runsBefore, "no run queued by the new leader");
    assert.equal(uploadsOf(), uploadsBefore, "no configuration version created by the new leader");

    await consul.register({ Name: "web", ID: "web-2", Address: "10.0.0.2", Port: 80 });
    await waitFor(async () => (await read(members)).includes("web-2"), 120_000, "the new leader's apply of the change");
    const url = urls.get(next.name)!;
    const event = await waitFor(async () => {
      const newest = (await http(url, "GET", "/v1/status/tasks/members?include=events")).body?.members?.events?.[0];
      return newest?.run_url && newest.changes?.add > 0 ? newest : false;
    }, 120_000, "the new leader's event of the change");
    assert.equal(event.success, true);
    assert.equal(runsOf(), runsBefore + 1, "exactly one run for the change");
    const run = await admin.runs.read(event.run_url.split("/").at(-1));
    assert.equal(run.status, "applied");
    assert.equal((await admin.workspaces.list(server.organization)).length, 1, "the same workspace, found again");
    assert.equal(await read(members), "web-1 10.0.0.1:80\nweb-2 10.0.0.2:80\n");
    for (const p of procs.values()) assert.equal(p.logs().includes(server.token), false, `${p.name} never logs the token`);
  });
});
