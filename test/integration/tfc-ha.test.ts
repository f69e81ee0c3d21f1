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

  it("the leader applies in the workspace; after it dies the new leader's first run changes nothing, and its event names the run", async () => {
    const first = (await firstToPrint([...procs.values()], /ha: acquired leadership lock: id=/, 120_000)).p;
    await waitFor(async () => (await read(members)).includes("web-1"), 120_000, "the first leader's apply");
    const ws = (await admin.workspaces.read(server.organization, "ha-members"))!;
    assert.deepEqual(ws.tags, ["source:cts"]);
    const before = runsOf();
    await first.terminate(15_000);
    const next = [...procs.values()].find((p) => p !== first)!;
    await next.waitForLine(/ha: acquired leadership lock: id=/, 120_000);
    const url = urls.get(next.name)!;
    const event = await waitFor(async () => {
      const status = await http(url, "GET", "/v1/status/tasks/members?include=events");
      const newest = status.body?.members?.events?.[0];
      // The new leader's run: queued after the failover, recorded as the newest event.
      return runsOf() > before && newest?.run_url && newest.changes?.add === 0 ? newest : false;
    }, 120_000, "the new leader's run");
    assert.equal(event.success, true);
    assert.deepEqual(event.changes, { add: 0, change: 0, destroy: 0 });
    const run = await admin.runs.read(event.run_url.split("/").at(-1));
    assert.equal(run.status, "planned_and_finished");
    assert.equal((await admin.workspaces.list(server.organization)).length, 1, "the same workspace, found again");
    assert.equal(await read(members), "web-1 10.0.0.1:80\n");
    for (const p of procs.values()) assert.equal(p.logs().includes(server.token), false, `${p.name} never logs the token`);
  });
});
