// A CTS Enterprise HCL config with driver "terraform-cloud", run by cts against the TFE-API test
// server (real OpenTofu behind it): the HCL keys reach the workspaces as CTS names and sets them.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { loadConfig } from "../../src/config/load.ts";
import { createRuntime } from "../../src/daemon/compose.ts";
import { createLogger } from "../../src/log/logger.ts";
import { TfcClient } from "../../src/tfc/client.ts";
import { startConsul, type ConsulAgent } from "../support/consul.ts";
import { tempDir } from "../support/cts.ts";
import { startTfcServer, type TfcTestServer } from "../support/tfc-server/index.ts";

/** A CTS-style module: writes the ids of the services it is given to `var.path`. */
const MODULE = `variable "services" { type = any }
variable "path" { type = string }
resource "local_file" "ids" {
  filename = var.path
  content  = join(",", sort([for s in var.services : s.id]))
}
`;

describe("a CTS HCL config with driver \"terraform-cloud\", run against the TFE-API test server", () => {
  let server: TfcTestServer;
  let consul: ConsulAgent;
  let tmp: { dir: string; cleanup(): Promise<void> };
  let admin: TfcClient;
  const lines: string[] = [];

  before(async () => {
    [server, consul, tmp] = await Promise.all([startTfcServer({ agentPools: [{ organization: "cts-test", name: "dc1-agents" }] }), startConsul(), tempDir("cts-tfc-hcl-")]);
    admin = new TfcClient({ hostname: server.url, token: server.token });
    await consul.register({ Name: "web", ID: "web-1", Address: "10.0.0.1", Port: 80 });
    await mkdir(join(tmp.dir, "modules", "ids"), { recursive: true });
    await writeFile(join(tmp.dir, "modules", "ids", "main.tf"), MODULE);
    for (const name of ["web", "db"]) await writeFile(join(tmp.dir, `${name}.tfvars`), `path = ${JSON.stringify(join(tmp.dir, `${name}.txt`))}\n`);
  });
  after(async () => {
    delete process.env.TFC_TOKEN;
    delete process.env.TFC_HOSTNAME;
    admin?.close();
    await Promise.all([server?.stop(), consul?.stop()]);
    await tmp?.cleanup();
  });

  it("once: workspaces '<workspace_prefix>-<task>' with the configured tags, mode, agent pool and versions, the module applied, no token in any log line", async () => {
    // Hostname and token from the environment, as CTS's TFC_HOSTNAME / TFC_TOKEN. Paths are
    // absolute: CTS takes relative ones from its working directory.
    process.env.TFC_HOSTNAME = server.url;
    process.env.TFC_TOKEN = server.token;
    const file = join(tmp.dir, "cts.hcl");
    await writeFile(
      file,
      `consul {
  address = "${consul.address}"
}

driver "terraform-cloud" {
  organization     = "${server.organization}"
  workspace_prefix = "cts"
  workspaces {
    tags = ["team-net"]
  }
}

task {
  name           = "web"
  description    = "web ids"
  module         = "${join(tmp.dir, "modules", "ids")}"
  variable_files = ["${join(tmp.dir, "web.tfvars")}"]
  condition "services" {
    names = ["web"]
  }
  terraform_cloud_workspace {
    execution_mode    = "agent"
    agent_pool_name   = "dc1-agents"
    terraform_version = "1.9.0"
  }
}

task {
  name              = "db"
  module            = "${join(tmp.dir, "modules", "ids")}"
  variable_files    = ["${join(tmp.dir, "db.tfvars")}"]
  terraform_version = "1.5.7"
  condition "services" {
    names = ["web"]
  }
}
`,
    );
    const loaded = await loadConfig(file);
    const rt = createRuntime(loaded, { mode: "once", log: createLogger({ level: "debug", write: (l) => lines.push(l) }), retries: 0 });
    try {
      const results = await rt.controller.once();
      for (const r of results) assert.equal(r.ok, true, `${r.task}: ${r.error?.message}`);
      assert.deepEqual(results.map((r) => [r.task, r.outcome]).sort(), [["db", "applied"], ["web", "applied"]]);
    } finally {
      await rt.close();
    }
    assert.equal(await readFile(join(tmp.dir, "web.txt"), "utf8"), "web-1");
    const web = (await admin.workspaces.read(server.organization, "cts-web"))!;
    const pool = (await admin.agentPools(server.organization)).find((p) => p.name === "dc1-agents")!;
    assert.deepEqual([web.description, web.terraformVersion, web.executionMode, web.agentPoolId, web.tags], ["web ids", "1.9.0", "agent", pool.id, ["source:cts", "team-net"]]);
    const db = (await admin.workspaces.read(server.organization, "cts-db"))!;
    assert.deepEqual([db.terraformVersion, db.executionMode], ["1.5.7", "remote"], "the task's deprecated terraform_version applies; remote is the default mode");
    assert.equal(lines.some((l) => l.includes(server.token)), false, "the token is in no log line");
  });
});
