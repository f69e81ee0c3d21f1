import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { writeFile } from "node:fs/promises";
import { fromCtsConfig, readCtsConfig } from "../../src/cts/config/load.ts";
import { loadConfig } from "../../src/config/load.ts";
import { knownSecrets } from "../../src/secrets/redactor.ts";
import { tempDir } from "../support/cts.ts";

const plain = (v: unknown) => JSON.parse(JSON.stringify(v));
const TFC_ENV = ["TFC_HOSTNAME", "TFC_ORGANIZATION", "TFC_TOKEN", "CTS_TEST_TFC_TOKEN"] as const;

/** A task block with the given extra lines (a schedule task, so no Consul data is needed). */
const task = (name: string, extra = "") => `task {
  name   = "${name}"
  module = "org/mod/x"
  condition "schedule" {
    cron = "* * * * *"
  }
${extra}}
`;
const DRIVER = 'driver "terraform-cloud" {\n  organization = "acme"\n  token = "tok-literal-123456"\n}\n';

describe("CTS's driver \"terraform-cloud\" in an HCL/JSON config", () => {
  let dir: string;
  let cleanup: () => Promise<void>;
  const saved: Record<string, string | undefined> = {};
  let n = 0;

  /** Writes `text` to a fresh file and reads it as a CTS config. */
  async function load(text: string, ext = "hcl") {
    const file = join(dir, `c${++n}.${ext}`);
    await writeFile(file, text);
    return readCtsConfig([file], dir);
  }
  async function refused(text: string, message: RegExp, ext = "hcl") {
    await assert.rejects(load(text, ext), (e: any) => {
      assert.equal(e.code, "CONFIG_INVALID");
      assert.match(e.message, message);
      return true;
    });
  }

  before(async () => {
    ({ dir, cleanup } = await tempDir("cts-hcl-tfc-"));
    for (const k of TFC_ENV) {
      saved[k] = process.env[k];
      delete process.env[k];
    }
  });
  after(async () => {
    for (const k of TFC_ENV) if (saved[k] === undefined) delete process.env[k];
    else process.env[k] = saved[k];
    await cleanup();
  });

  it("maps a whole CTS Enterprise-style config onto driver.terraformCloud and each task's terraformCloudWorkspace", async () => {
    const r = await load(`log_level = "INFO"
port = 8558

consul {
  address = "consul.example.com:8500"
}

driver "terraform-cloud" {
  hostname     = "https://tfe.example.com"
  organization = "acme"
  token        = "{{ env \\"CTS_TEST_TFC_TOKEN\\" }}"

  workspaces {
    prefix         = "cts-"
    tags           = ["team-net", "prod"]
    tags_allowlist = ["prod"]
    tags_denylist  = ["frozen"]
  }

  required_providers {
    local = {
      source  = "hashicorp/local"
      version = "2.5.1"
    }
  }

  tls {
    ca_cert     = "/etc/tfe/ca.pem"
    server_name = "tfe.internal"
  }
}

terraform_provider "local" {}

${task("web", `  providers = ["local"]
  terraform_cloud_workspace {
    execution_mode  = "agent"
    agent_pool_name = "dc1-agents"
    terraform_version = "1.5.7"
  }
`)}
${task("db", '  terraform_version = "1.4.6"\n')}
${task("plain")}`);
    const { tasks, ...rest } = r.config;
    assert.deepEqual(plain(rest), {
      api: { port: 8558 },
      consul: { address: "consul.example.com:8500" },
      driver: {
        terraformCloud: {
          hostname: "https://tfe.example.com",
          organization: "acme",
          token: { env: "CTS_TEST_TFC_TOKEN" },
          workspaces: { prefix: "cts-", tags: ["team-net", "prod"], tagsAllowlist: ["prod"], tagsDenylist: ["frozen"] },
          tls: { caCert: "/etc/tfe/ca.pem", serverName: "tfe.internal" },
          requiredProviders: { local: { source: "hashicorp/local", version: "2.5.1" } },
        },
      },
    });
    assert.deepEqual(
      tasks.map((t) => [t.name, plain(t.terraformCloudWorkspace ?? null)]),
      [
        ["web", { executionMode: "agent", agentPoolName: "dc1-agents", terraformVersion: "1.5.7" }],
        ["db", { terraformVersion: "1.4.6" }],
        ["plain", null],
      ],
    );
    assert.deepEqual(plain((tasks[0] as any).providers), [{ name: "local", config: {}, taskEnv: {}, source: "hashicorp/local", version: "2.5.1" }]);
    assert.ok(r.warnings.some((w) => /'terraform_version' is deprecated: write terraform_cloud_workspace \{ terraform_version = "1\.4\.6" \} in task 'db'/.test(w)), r.warnings.join("\n"));
  });

  it("passes loadConfig's validation (as `cts start -config-file x.hcl` loads it)", async () => {
    const file = join(dir, "whole.hcl");
    await writeFile(file, `${DRIVER.replace("}\n", '  workspaces {\n    prefix = "cts-"\n    tags = ["team-a"]\n  }\n}\n')}${task("web", '  terraform_cloud_workspace {\n    execution_mode = "agent"\n    agent_pool_id = "apool-1"\n  }\n')}`);
    const loaded = await loadConfig(file);
    assert.deepEqual(plain(loaded.config.driver?.terraformCloud?.workspaces), { prefix: "cts-", tags: ["team-a"] });
    assert.deepEqual(plain(loaded.config.tasks[0]!.terraformCloudWorkspace), { executionMode: "agent", agentPoolId: "apool-1" });
  });

  it("reads the same driver from JSON and from HCL v1's attribute form", async () => {
    const expected = { organization: "acme", token: "tok-literal-123456", workspaces: { prefix: "p-", tags: ["a"] }, tls: { verify: false } };
    const json = await load(JSON.stringify({ driver: { "terraform-cloud": { organization: "acme", token: "tok-literal-123456", workspaces: { prefix: "p-", tags: ["a"] }, tls: { verify: false } } } }), "json");
    assert.deepEqual(plain(json.config.driver), { terraformCloud: expected });
    const v1 = await load('driver "terraform-cloud" {\n  organization = "acme"\n  token = "tok-literal-123456"\n  workspaces = {\n    prefix = "p-"\n    tags = ["a"]\n  }\n  tls = {\n    verify = false\n  }\n}\n');
    assert.deepEqual(plain(v1.config.driver), { terraformCloud: expected });
    const taskJson = await load(JSON.stringify({ driver: { "terraform-cloud": { organization: "acme", token: "tok-literal-123456" } }, task: [{ name: "t", module: "org/m/x", condition: { schedule: { cron: "* * * * *" } }, terraform_cloud_workspace: { execution_mode: "remote" } }] }), "json");
    assert.deepEqual(plain(taskJson.config.tasks[0]!.terraformCloudWorkspace), { executionMode: "remote" });
  });

  describe("the environment fallbacks", () => {
    const withEnv = async (env: Record<string, string>, fn: () => Promise<void>) => {
      Object.assign(process.env, env);
      try {
        await fn();
      } finally {
        for (const k of Object.keys(env)) delete process.env[k];
      }
    };

    it("takes hostname, organization and token from TFC_HOSTNAME, TFC_ORGANIZATION and TFC_TOKEN; the token stays a reference to the environment", async () => {
      await withEnv({ TFC_HOSTNAME: "tfe.example.com", TFC_ORGANIZATION: "from-env", TFC_TOKEN: "env-token-value-987" }, async () => {
        const r = await load('driver "terraform-cloud" {}\n');
        assert.deepEqual(plain(r.config.driver), { terraformCloud: { hostname: "tfe.example.com", organization: "from-env", token: { env: "TFC_TOKEN" } } });
        assert.ok(!JSON.stringify(r).includes("env-token-value-987"), "the token's value is not in the loaded config");
      });
    });

    it("lets the config win over the environment", async () => {
      await withEnv({ TFC_HOSTNAME: "env.example.com", TFC_ORGANIZATION: "from-env", TFC_TOKEN: "env-token-value-987" }, async () => {
        const r = await load('driver "terraform-cloud" {\n  hostname = "cfg.example.com"\n  organization = "from-cfg"\n  token = "cfg-token-value-123"\n}\n');
        assert.deepEqual(plain(r.config.driver), { terraformCloud: { hostname: "cfg.example.com", organization: "from-cfg", token: "cfg-token-value-123" } });
      });
    });

    it("leaves the hostname unset (the driver's default https://app.terraform.io) without TFC_HOSTNAME", async () => {
      const r = await load(DRIVER);
      assert.equal(r.config.driver?.terraformCloud?.hostname, undefined);
    });

    it("refuses a config without organization or token, naming the variable that would do", async () => {
      await refused('driver "terraform-cloud" {\n  token = "x-123456789"\n}\n', /c\d+\.hcl:1: driver "terraform-cloud" needs the organization: set organization = "<name>" or the TFC_ORGANIZATION environment variable\./);
      await refused('driver "terraform-cloud" {\n  organization = "acme"\n}\n', /c\d+\.hcl:1: driver "terraform-cloud" needs an API token: set the TFC_TOKEN environment variable \(preferred: it stays out of files\) or token = "\.\.\."\./);
      await withEnv({ TFC_HOSTNAME: "ftp://nope" }, () => refused(DRIVER, /c\d+\.hcl:1: hostname 'ftp:\/\/nope' \(from TFC_HOSTNAME\) is not a host name or https:\/\/ address/));
      await refused('driver "terraform-cloud" {\n  organization = "acme"\n  token = "x-123456789"\n  hostname = "https://tfe.example.com/api"\n}\n', /c\d+\.hcl:4: hostname 'https:\/\/tfe\.example\.com\/api' is not a host name/);
    });
  });

  it("registers a literal token with the redactor, so no log line or error shows it", async () => {
    await load('driver "terraform-cloud" {\n  organization = "acme"\n  token = "literal-secret-token-4242"\n}\n');
    assert.ok(!knownSecrets.redact("sent literal-secret-token-4242 along").includes("literal-secret-token-4242"));
  });

  it("accepts token = {{ env \"NAME\" }} and refuses any other template", async () => {
    const r = await load('driver "terraform-cloud" {\n  organization = "acme"\n  token = "{{ env \\"MY_TFC\\" }}"\n}\n');
    assert.deepEqual(plain(r.config.driver?.terraformCloud?.token), { env: "MY_TFC" });
    await refused('driver "terraform-cloud" {\n  organization = "acme"\n  token = "{{ with secret \\"kv/tfc\\" }}{{ .Data.token }}{{ end }}"\n}\n', /c\d+\.hcl:3: 'token' in driver "terraform-cloud" may only be a literal or \{\{ env "NAME" \}\}/);
    await refused('driver "terraform-cloud" {\n  organization = "{{ env \\"ORG\\" }}"\n  token = "x-123456789"\n}\n', /c\d+\.hcl:2: 'organization' uses template syntax/);
  });

  it("names workspaces '<workspace_prefix>-<task>' for the deprecated workspace_prefix, with CTS's deprecation warning", async () => {
    const r = await load('driver "terraform-cloud" {\n  organization = "acme"\n  token = "x-123456789"\n  workspace_prefix = "cts"\n}\n');
    assert.deepEqual(plain(r.config.driver?.terraformCloud?.workspaces), { prefix: "cts-" });
    assert.ok(r.warnings.some((w) => /c\d+\.hcl:4: 'workspace_prefix' is deprecated \(since CTS 0\.5\): workspaces are named "cts-<task>"\. Write workspaces \{ prefix = "cts-" \} instead\./.test(w)), r.warnings.join("\n"));
    const both = await load('driver "terraform-cloud" {\n  organization = "acme"\n  token = "x-123456789"\n  workspace_prefix = "old"\n  workspaces {\n    prefix = "new_"\n  }\n}\n');
    assert.deepEqual(plain(both.config.driver?.terraformCloud?.workspaces), { prefix: "new_" });
    assert.ok(both.warnings.some((w) => /'workspace_prefix' is deprecated and ignored: workspaces\.prefix \("new_"\) is set and wins/.test(w)));
  });

  it("applies the rules cts.config.ts gets (names, tags) at the HCL key's line", async () => {
    await refused('driver "terraform-cloud" {\n  organization = "acme"\n  token = "x-123456789"\n  workspaces {\n    tags_denylist = ["Frozen Tag"]\n  }\n}\n', /c\d+\.hcl:5: driver "terraform-cloud" workspaces\.tags_denylist must be a list of tags/);
    await refused('driver "terraform-cloud" {\n  organization = "acme corp"\n  token = "x-123456789"\n}\n', /c\d+\.hcl:2: driver "terraform-cloud" organization 'acme corp' is not an organization name/);
    await refused('driver "terraform-cloud" {\n  organization = "acme"\n  token = "x-123456789"\n  workspace_prefix = "a b"\n}\n', /c\d+\.hcl:4: driver "terraform-cloud" workspaces\.prefix must be letters, digits/);
  });

  it("refuses tag lists that are not lists of names", async () => {
    for (const key of ["tags", "tags_allowlist", "tags_denylist"])
      await refused(`driver "terraform-cloud" {\n  organization = "acme"\n  token = "x-123456789"\n  workspaces {\n    ${key} = "prod"\n  }\n}\n`, new RegExp(`c\\d+\\.hcl:5: 'workspaces\\.${key}' must be a list of tag names`));
    await refused('driver "terraform-cloud" {\n  organization = "acme"\n  token = "x-123456789"\n  workspaces {\n    colour = "red"\n  }\n}\n', /c\d+\.hcl:5: 'colour' is not a valid key in driver\.workspaces/);
  });

  it("maps the tls block: any field turns it on, verify defaults to true, enabled = false turns it off", async () => {
    const tls = async (body: string) => (await load(`driver "terraform-cloud" {\n  organization = "acme"\n  token = "x-123456789"\n  tls {\n${body}\n  }\n}\n`)).config.driver?.terraformCloud?.tls;
    assert.deepEqual(plain(await tls('    ca_path = "/etc/cas"\n    cert = "/c.pem"\n    key = "/k.pem"\n    verify = true')), { caPath: "/etc/cas", cert: "/c.pem", key: "/k.pem" });
    assert.deepEqual(plain(await tls("    enabled = true")), {});
    assert.deepEqual(plain(await tls("    verify = false")), { verify: false });
    assert.equal(await tls('    enabled = false\n    ca_cert = "/ca.pem"'), undefined);
    await refused('driver "terraform-cloud" {\n  organization = "acme"\n  token = "x-123456789"\n  tls {\n    cert = "/c.pem"\n  }\n}\n', /c\d+\.hcl:4: driver "terraform-cloud" tls needs both cert and key/);
    await refused('driver "terraform-cloud" {\n  organization = "acme"\n  token = "x-123456789"\n  tls {\n    verify_incoming = true\n  }\n}\n', /c\d+\.hcl:5: 'verify_incoming' is not a valid key in driver\.tls/);
  });

  it("refuses the other driver's keys under each driver", async () => {
    await refused('driver "terraform-cloud" {\n  organization = "acme"\n  token = "x-123456789"\n  backend "consul" {}\n}\n', /c\d+\.hcl:4: 'backend' is not a valid key in driver "terraform-cloud": Terraform Cloud runs Terraform and keeps the state itself/);
    await refused('driver "terraform-cloud" {\n  organization = "acme"\n  token = "x-123456789"\n  version = "1.5.7"\n}\n', /c\d+\.hcl:4: 'version' is not a valid key in driver "terraform-cloud"/);
    await refused('driver "terraform" {\n  log = true\n  organization = "acme"\n}\n', /c\d+\.hcl:3: 'organization' is not a valid key in driver "terraform": it belongs to driver "terraform-cloud"/);
    await refused('driver "terraform" {\n  workspaces {\n    prefix = "x"\n  }\n}\n', /c\d+\.hcl:2: 'workspaces' is not a valid key in driver "terraform"/);
    await refused('driver "local" {}\n', /c\d+\.hcl:1: driver "local" is not a driver\. Use driver "terraform" or driver "terraform-cloud"\./);
  });

  it("refuses both drivers at once, in one file or across files", async () => {
    await refused(`driver "terraform" {\n  log = true\n}\n${DRIVER}`, /c\d+\.hcl:4: only one driver can be configured: driver "terraform" \(.*c\d+\.hcl:1\) and driver "terraform-cloud" are both set\. Remove one/);
    const a = join(dir, "two-a.hcl");
    const b = join(dir, "two-b.hcl");
    await writeFile(a, DRIVER);
    await writeFile(b, 'driver "terraform" {}\n');
    await assert.rejects(readCtsConfig([a, b], dir), (e: any) => /two-b\.hcl:1: only one driver can be configured/.test(e.message));
  });

  it("merges driver \"terraform-cloud\" across files key by key, later files winning", async () => {
    const a = join(dir, "merge-a.hcl");
    const b = join(dir, "merge-b.hcl");
    await writeFile(a, 'driver "terraform-cloud" {\n  organization = "first"\n  token = "x-123456789"\n  workspaces {\n    prefix = "a-"\n  }\n}\n');
    await writeFile(b, 'driver "terraform-cloud" {\n  organization = "second"\n}\n');
    const r = await readCtsConfig([a, b], dir);
    assert.deepEqual(plain(r.config.driver), { terraformCloud: { organization: "second", token: "x-123456789", workspaces: { prefix: "a-" } } });
  });

  it("keeps a task's terraform_cloud_workspace for fromCtsConfig, whose TypeScript config chooses the driver", async () => {
    const file = join(dir, "legacy-tasks.hcl");
    await writeFile(file, task("legacy", '  terraform_cloud_workspace {\n    execution_mode = "agent"\n    agent_pool_name = "p"\n  }\n'));
    const [t] = await fromCtsConfig(file);
    assert.deepEqual(plain(t!.terraformCloudWorkspace), { executionMode: "agent", agentPoolName: "p" });
    await writeFile(file, task("legacy", '  terraform_cloud_workspace {\n    execution_mode = "agent"\n  }\n'));
    await assert.rejects(fromCtsConfig(file), /agent_pool_id or agent_pool_name is required if execution mode is 'agent'/);
  });

  it("warns that working_dir and consul.kv_path do nothing with Terraform Cloud, and sets no local driver", async () => {
    const r = await load(`working_dir = "sync"\nconsul {\n  kv_path = "other/"\n}\n${DRIVER}`);
    assert.deepEqual(Object.keys(r.config.driver ?? {}), ["terraformCloud"]);
    assert.ok(r.warnings.some((w) => /c\d+\.hcl:1: 'working_dir' is not used with driver "terraform-cloud"/.test(w)), r.warnings.join("\n"));
    assert.ok(r.warnings.some((w) => /c\d+\.hcl:3: 'kv_path' has no effect with driver "terraform-cloud"/.test(w)), r.warnings.join("\n"));
  });

  describe("a task's terraform_cloud_workspace block and terraform_version", () => {
    const ws = (lines: string, extra = "") => `${DRIVER}${task("t", `  terraform_cloud_workspace {\n${lines}\n  }\n${extra}`)}`;
    const wsOf = async (lines: string, extra = "") => plain((await load(ws(lines, extra))).config.tasks[0]!.terraformCloudWorkspace ?? null);

    it("accepts each valid setting", async () => {
      assert.deepEqual(await wsOf('    execution_mode = "remote"'), { executionMode: "remote" });
      assert.deepEqual(await wsOf('    execution_mode = "agent"\n    agent_pool_id = "apool-123"'), { executionMode: "agent", agentPoolId: "apool-123" });
      assert.deepEqual(await wsOf('    execution_mode = "agent"\n    agent_pool_name = "pool"'), { executionMode: "agent", agentPoolName: "pool" });
      assert.deepEqual(await wsOf('    terraform_version = "0.15.1"'), { terraformVersion: "0.15.1" });
      assert.deepEqual(await wsOf('    execution_mode = ""\n    agent_pool_id = ""'), null, "empty strings count as unset (CTS's IsEmpty)");
    });

    it("warns when both pools are set (the id is used)", async () => {
      const r = await load(ws('    execution_mode = "agent"\n    agent_pool_id = "apool-1"\n    agent_pool_name = "pool"'));
      assert.deepEqual(plain(r.config.tasks[0]!.terraformCloudWorkspace), { executionMode: "agent", agentPoolId: "apool-1", agentPoolName: "pool" });
      assert.ok(r.warnings.some((w) => /task 't': agent_pool_id and agent_pool_name are both configured, agent_pool_id will be used/.test(w)), r.warnings.join("\n"));
    });

    it("refuses each broken rule with CTS's message, the file:line of the key and the fix", async () => {
      // DRIVER is 4 lines, the task's block starts at line 11, its first key is line 12.
      await refused(ws('    execution_mode = "local"'), /c\d+\.hcl:12: task 't': terraform_cloud_workspace\.execution_mode: execution mode 'local' not supported for CTS, use 'remote' or 'agent' instead\. Set execution_mode = "remote" or "agent"/);
      await refused(ws('    execution_mode = "agent"'), /c\d+\.hcl:12: task 't': terraform_cloud_workspace\.execution_mode: agent_pool_id or agent_pool_name is required if execution mode is 'agent'\. Add agent_pool_id or agent_pool_name/);
      await refused(ws('    execution_mode = "remote"\n    agent_pool_id = "apool-1"'), /c\d+\.hcl:13: task 't': terraform_cloud_workspace\.agent_pool_id: agent pool configured when execution mode is not 'agent'\. Set execution_mode = "agent", or remove the agent pool\./);
      await refused(ws('    agent_pool_name = "pool"'), /c\d+\.hcl:12: task 't': terraform_cloud_workspace\.agent_pool_name: agent pool configured when execution mode is not 'agent'/);
      await refused(ws('    terraform_version = "invalid"'), /c\d+\.hcl:12: task 't': terraform_cloud_workspace\.terraform_version: Malformed version: invalid\. Write an exact version x\.y\.z within >= 0\.13\.0, <= 1\.14\.3\./);
      await refused(ws('    terraform_version = "1.5"'), /c\d+\.hcl:12: .*provide the exact Terraform version to install: 1\.5\./);
      await refused(ws('    terraform_version = "0.12.0"'), /c\d+\.hcl:12: .*Terraform version is not supported by Consul-Terraform-Sync, try updating to a different version \(>= 0\.13\.0, <= 1\.14\.3\): 0\.12\.0\./);
      await refused(ws('    execution_mode = 3'), /c\d+\.hcl:12: 'terraform_cloud_workspace\.execution_mode' must be a string\./);
      await refused(ws('    colour = "red"'), /c\d+\.hcl:12: 'colour' is not a valid key in task\.terraform_cloud_workspace/);
    });

    it("takes the block's terraform_version over the task's deprecated one, and checks the task's", async () => {
      assert.deepEqual(await wsOf('    terraform_version = "1.6.0"', '  terraform_version = "1.2.0"\n'), { terraformVersion: "1.6.0" });
      await refused(`${DRIVER}${task("t", '  terraform_version = "2.0.0"\n')}`, /c\d+\.hcl:11: task 't': terraform_version: Terraform version is not supported by Consul-Terraform-Sync.*: 2\.0\.0\. Write an exact version/);
    });

    it("is refused under driver \"terraform\" (or no driver) unless empty, as CTS's OSS build does", async () => {
      await refused(task("t", '  terraform_cloud_workspace {\n    execution_mode = "remote"\n  }\n'), /c\d+\.hcl:8: task 't': 'terraform_cloud_workspace' is only valid with driver "terraform-cloud" \(as in CTS\)\. Remove the block, or configure driver "terraform-cloud"/);
      await refused(`driver "terraform" {}\n${task("t", '  terraform_version = "1.5.7"\n')}`, /c\d+\.hcl:8: task 't': 'terraform_version' is only valid with driver "terraform-cloud" \(as in CTS\)/);
      const empty = await load(task("t", '  terraform_cloud_workspace {\n    execution_mode = ""\n  }\n  terraform_version = ""\n'));
      assert.equal(empty.config.tasks[0]!.terraformCloudWorkspace, undefined);
    });
  });
});
