import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { loadConfig } from "../../src/config/load.ts";
import { createRuntime } from "../../src/daemon/compose.ts";
import { createLogger } from "../../src/log/logger.ts";
import { TfcClient } from "../../src/tfc/client.ts";
import { startConsul, type ConsulAgent } from "../support/consul.ts";
import { FIXTURE_TASKS, PUBLIC_API, tempDir } from "../support/cts.ts";
import { startTfcServer, type TfcTestServer } from "../support/tfc-server/index.ts";

const TOKEN_VAR = "CTS_TEST_TFC_DRIVER_TOKEN";

/** A CTS-style module: writes the ids of the services it is given to `var.path`. */
const MODULE = `variable "services" { type = any }
variable "path" { type = string }
resource "local_file" "ids" {
  filename = var.path
  content  = join(",", sort([for s in var.services : s.id]))
}
`;

describe("cts with driver.terraformCloud: a task class (CDKTF) and a ModuleTask run as Terraform Cloud workspaces", () => {
  let server: TfcTestServer;
  let consul: ConsulAgent;
  let tmp: { dir: string; cleanup(): Promise<void> };
  let file: string;
  let admin: TfcClient;
  const lines: string[] = [];

  async function runtime(mode: "once" | "inspect") {
    const rt = createRuntime(await loadConfig(file), { mode, log: createLogger({ level: "debug", write: (l) => lines.push(l) }), retries: 0 });
    return rt;
  }

  before(async () => {
    [server, consul, tmp] = await Promise.all([startTfcServer(), startConsul(), tempDir("cts-tfc-rt-")]);
    process.env[TOKEN_VAR] = server.token;
    admin = new TfcClient({ hostname: server.url, token: server.token });
    await consul.register({ Name: "web", ID: "web-1", Address: "10.0.0.1", Port: 80 });
    await mkdir(join(tmp.dir, "modules", "ids"), { recursive: true });
    await writeFile(join(tmp.dir, "modules", "ids", "main.tf"), MODULE);
    file = join(tmp.dir, "cts.config.ts");
    await writeFile(
      file,
      `import { defineConfig, ModuleTask, services } from ${JSON.stringify(PUBLIC_API)};
import { MemberList } from ${JSON.stringify(FIXTURE_TASKS)};
export default defineConfig({
  consul: { address: ${JSON.stringify(consul.address)} },
  driver: { terraformCloud: { hostname: ${JSON.stringify(server.url)}, organization: ${JSON.stringify(server.organization)}, token: { env: ${JSON.stringify(TOKEN_VAR)} }, workspaces: { prefix: "cts-", tags: ["team-a"] } } },
  tasks: [
    new MemberList("members", ${JSON.stringify(join(tmp.dir, "members.txt"))}),
    new ModuleTask({ name: "ids", description: "service ids", condition: services({ names: ["web"] }), module: "./modules/ids", variables: { path: ${JSON.stringify(join(tmp.dir, "ids.txt"))} }, terraformCloudWorkspace: { executionMode: "remote", terraformVersion: "1.9.0" } }),
  ],
});
`,
    );
  });
  after(async () => {
    delete process.env[TOKEN_VAR];
    admin?.close();
    await Promise.all([server?.stop(), consul?.stop()]);
    await tmp?.cleanup();
  });

  it("once: both tasks apply in their workspaces (the module copied into the upload), events carry the run URL", async () => {
    const rt = await runtime("once");
    try {
      const results = await rt.controller.once();
      for (const r of results) assert.equal(r.ok, true, `${r.task}: ${r.error?.message}`);
      assert.deepEqual(results.map((r) => [r.task, r.outcome, r.result?.changesPresent]).sort(), [["ids", "applied", true], ["members", "applied", true]]);
      assert.equal(await readFile(join(tmp.dir, "members.txt"), "utf8"), "web-1 10.0.0.1:80\n");
      assert.equal(await readFile(join(tmp.dir, "ids.txt"), "utf8"), "web-1");
      const ids = (await admin.workspaces.read(server.organization, "cts-ids"))!;
      assert.deepEqual([ids.description, ids.terraformVersion, ids.tags], ["service ids", "1.9.0", ["source:cts", "team-a"]]);
      const event = rt.controller.events.list("ids")[0]!;
      assert.match(event.run_url!, new RegExp(`/app/${server.organization}/workspaces/cts-ids/runs/run-`));
      assert.equal(lines.some((l) => l.includes(server.token)), false, "the token is in no log line");
    } finally {
      await rt.close();
    }
  });

  it("a fresh instance (a restart; a new HA leader skips unchanged tasks instead: tfc-ha test) runs each task once: the runs change nothing", async () => {
    const rt = await runtime("once");
    try {
      const results = await rt.controller.once();
      assert.deepEqual(results.map((r) => [r.task, r.ok, r.result?.changesPresent, r.result?.summary]).sort(), [
        ["ids", true, false, { add: 0, change: 0, destroy: 0 }],
        ["members", true, false, { add: 0, change: 0, destroy: 0 }],
      ]);
    } finally {
      await rt.close();
    }
  });

  it("inspect: a catalog change shows as a speculative plan with its URL; nothing is applied", async () => {
    await consul.register({ Name: "web", ID: "web-2", Address: "10.0.0.2", Port: 80 });
    const rt = await runtime("inspect");
    try {
      const results = await rt.controller.inspect();
      for (const r of results) {
        assert.equal(r.ok, true, `${r.task}: ${r.error?.message}`);
        assert.equal(r.result?.changesPresent, true, r.task);
        assert.match(r.result!.url!, /\/runs\/run-/);
      }
      assert.equal(await readFile(join(tmp.dir, "ids.txt"), "utf8"), "web-1");
    } finally {
      await rt.close();
    }
  });
});
