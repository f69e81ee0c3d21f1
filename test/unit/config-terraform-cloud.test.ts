import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { validateConfig } from "../../src/config/load.ts";
import {
  resolveTerraformCloudToken,
  terraformCloudDriverProblems,
  terraformCloudSettings,
  terraformCloudWorkspaceProblems,
} from "../../src/config/terraform-cloud.ts";
import { terraformVersionProblem } from "../../src/tfc/supported-versions.ts";
import { knownSecrets } from "../../src/secrets/redactor.ts";

const messages = (ws: unknown) => terraformCloudWorkspaceProblems(ws as never, "ws").map((p) => p.message);

describe("a task's terraformCloudWorkspace, checked with CTS's rules and messages", () => {
  it("accepts nothing, empty, remote, agent with a pool id or name, and both pools", () => {
    for (const ws of [undefined, {}, { executionMode: "remote" }, { executionMode: "agent", agentPoolId: "apool-1" }, { executionMode: "agent", agentPoolName: "pool" }, { executionMode: "agent", agentPoolId: "apool-1", agentPoolName: "pool" }])
      assert.deepEqual(messages(ws), [], JSON.stringify(ws));
  });

  it("refuses local mode, agent without a pool, and a pool without agent mode (even with no mode)", () => {
    assert.deepEqual(messages({ executionMode: "local" }), ["execution mode 'local' not supported for CTS, use 'remote' or 'agent' instead"]);
    assert.deepEqual(messages({ executionMode: "agent" }), ["agent_pool_id or agent_pool_name is required if execution mode is 'agent'"]);
    assert.deepEqual(messages({ executionMode: "remote", agentPoolId: "apool-1" }), ["agent pool configured when execution mode is not 'agent'"]);
    assert.deepEqual(messages({ executionMode: "remote", agentPoolName: "pool" }), ["agent pool configured when execution mode is not 'agent'"]);
    assert.deepEqual(messages({ agentPoolName: "pool" }), ["agent pool configured when execution mode is not 'agent'"]);
  });

  it("accepts an exact version within >= 0.13.0, <= 1.14.3 and refuses the rest", () => {
    for (const v of ["0.15.1", "0.13.0", "1.14.3", "1.5.7"]) assert.equal(terraformVersionProblem(v), undefined, v);
    assert.equal(terraformVersionProblem("invalid"), "Malformed version: invalid");
    assert.equal(terraformVersionProblem("1.5"), "provide the exact Terraform version to install: 1.5");
    for (const v of ["0.12.0", "1.14.4", "1.6.0-beta1"]) assert.match(terraformVersionProblem(v)!, /not supported by Consul-Terraform-Sync.*>= 0\.13\.0, <= 1\.14\.3\): /);
    assert.deepEqual(terraformCloudWorkspaceProblems({ terraformVersion: "0.12.0" }, "tasks[0].terraformCloudWorkspace").map((p) => p.field), ["tasks[0].terraformCloudWorkspace.terraformVersion"]);
    assert.deepEqual(terraformCloudWorkspaceProblems(undefined, "ws", { version: "1", field: 'task "a".terraform_version' }).map((p) => p.field), ['task "a".terraform_version']);
  });

  it("names unknown keys and wrong types", () => {
    assert.match(messages({ mode: "remote" })[0]!, /is not a setting/);
    assert.match(messages({ terraformVersion: 1 })[0]!, /must be a string/);
  });
});

describe("driver.terraformCloud", () => {
  const ok = { terraformCloud: { organization: "acme", token: { env: "X" } } };
  const limits = (extra: Record<string, unknown>) => terraformCloudDriverProblems({ terraformCloud: { ...ok.terraformCloud, ...extra } } as never, {});

  it("takes the run, lock and poll limits as durations (text or ms) and hands them to the driver", () => {
    assert.deepEqual(limits({ timeout: "2h", lockTimeout: "0s", pollInterval: "250ms" }), []);
    assert.deepEqual(limits({ timeout: 90_000, lockTimeout: 1_000, pollInterval: 100 }), []);
    const s = terraformCloudSettings({ organization: "acme", timeout: "2h", lockTimeout: "90s", pollInterval: "500ms" }, {});
    assert.deepEqual([s.runTimeoutMs, s.lockTimeoutMs, s.pollIntervalMs], [2 * 3_600_000, 90_000, 500]);
    const partial = terraformCloudSettings({ organization: "acme", lockTimeout: 0 }, {});
    assert.deepEqual([partial.runTimeoutMs, partial.lockTimeoutMs, partial.pollIntervalMs], [30 * 60_000, 0, 1_000], "unset limits keep their defaults; 0 s is a lock not waited for");
  });

  it("refuses a limit that is not a duration, or outside its range, naming the field, the range and an example", () => {
    const [notDuration] = limits({ timeout: "soon" });
    assert.equal(notDuration!.field, "driver.terraformCloud.timeout");
    assert.equal(notDuration!.message, `'soon' is not a duration (how long a run is followed before TFC_RUN_TIMEOUT). Use milliseconds or e.g. "30m", between 1s and 24h.`);
    const [fast] = limits({ pollInterval: "10ms" });
    assert.equal(fast!.field, "driver.terraformCloud.pollInterval");
    assert.equal(fast!.message, "must be between 100ms and 1m (the longest wait between reads of a run); got 10ms.");
    assert.deepEqual(limits({ timeout: "0s", lockTimeout: "25h", pollInterval: -5 }).map((p) => p.field), ["driver.terraformCloud.timeout", "driver.terraformCloud.lockTimeout", "driver.terraformCloud.pollInterval"]);
    assert.deepEqual(limits({ timeout: true, lockTimeout: "5" }).map((p) => p.field), ["driver.terraformCloud.timeout", "driver.terraformCloud.lockTimeout"]);
  });

  it("a config with a bad limit fails to validate with the field named", () => {
    assert.throws(
      () => validateConfig({ tasks: [], driver: { terraformCloud: { organization: "acme", token: "t", pollInterval: "fast" } } } as never, "cts.config.ts"),
      (err: Error) => /driver\.terraformCloud\.pollInterval 'fast' is not a duration/.test(err.message),
    );
  });

  it("needs an organization (or TFC_ORGANIZATION); the token's form is checked, its value is read when the driver starts", () => {
    assert.deepEqual(terraformCloudDriverProblems(ok, {}), []);
    assert.deepEqual(terraformCloudDriverProblems({ terraformCloud: {} }, {}).map((p) => p.field), ["driver.terraformCloud.organization"]);
    assert.deepEqual(terraformCloudDriverProblems({ terraformCloud: {} }, { TFC_ORGANIZATION: "acme" }), []);
    for (const token of ["", { env: "" }, { file: 1 }, { env: "A", file: "b" }, 5])
      assert.equal(terraformCloudDriverProblems({ terraformCloud: { organization: "acme", token } } as never, {})[0]?.field, "driver.terraformCloud.token", JSON.stringify(token));
  });

  it("allows one driver only, a host name or http(s) URL, and known keys", () => {
    assert.match(terraformCloudDriverProblems({ ...ok, terraform: {} }, {})[0]!.message, /Keep one driver/);
    for (const h of ["app.terraform.io", "https://tfe.example.com", "http://127.0.0.1:8080", "tfe.example.com:8443"]) assert.deepEqual(terraformCloudDriverProblems({ terraformCloud: { ...ok.terraformCloud, hostname: h } }, {}), [], h);
    for (const h of ["ftp://x", "https://x/api", "https://user:pw@x", ""]) assert.equal(terraformCloudDriverProblems({ terraformCloud: { ...ok.terraformCloud, hostname: h } }, {})[0]?.field, "driver.terraformCloud.hostname", h);
    const odd = terraformCloudDriverProblems({ terraformCloud: { ...ok.terraformCloud, workspace_prefix: "x", workspaces: { prefix: "a b", tags: ["Bad Tag"] } } as never }, {});
    assert.deepEqual(odd.map((p) => p.field), ["driver.terraformCloud.workspace_prefix", "driver.terraformCloud.workspaces.prefix", "driver.terraformCloud.workspaces.tags"]);
  });

  it("is checked when a config is validated, with the tasks' workspace settings", () => {
    const task = { name: "web", description: "", enabled: true, condition: { kind: "services", query: { names: ["web"] } }, inputs: {}, secrets: {}, synthesize() {}, terraformCloudWorkspace: { executionMode: "agent" } };
    assert.throws(
      () => validateConfig({ tasks: [task], driver: { terraformCloud: { token: "t" } } } as never, "cts.config.ts"),
      (err: Error) => /tasks\[0\]\.terraformCloudWorkspace\.executionMode agent_pool_id or agent_pool_name is required/.test(err.message) && /driver\.terraformCloud\.organization is required/.test(err.message),
    );
  });

  it("reads the token from the string, { env }, { file } or TFC_TOKEN, and hides it from logs", async () => {
    const dir = await mkdtemp(join(tmpdir(), "cts-tfc-token-"));
    try {
      await writeFile(join(dir, "token"), "from-file-token-123\n");
      assert.equal(resolveTerraformCloudToken({ token: { file: "token" } }, dir, {}), "from-file-token-123");
      assert.equal(resolveTerraformCloudToken({ token: { env: "MY_TFC" } }, dir, { MY_TFC: "from-env-token-456" }), "from-env-token-456");
      assert.equal(resolveTerraformCloudToken({}, dir, { TFC_TOKEN: "fallback-token-789" }), "fallback-token-789");
      assert.equal(resolveTerraformCloudToken({ token: "inline-token-000" }, dir, {}), "inline-token-000");
      assert.equal(knownSecrets.redact("x from-file-token-123 y").includes("from-file-token-123"), false);
      assert.throws(() => resolveTerraformCloudToken({ token: { env: "NOPE" } }, dir, {}), /NOPE, which is not set/);
      assert.throws(() => resolveTerraformCloudToken({ token: { file: "missing" } }, dir, {}), /cannot be read/);
      assert.throws(() => resolveTerraformCloudToken({}, dir, {}), /token is not set.*TFC_TOKEN/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("fills in the default hostname and the TFC_* fallbacks", () => {
    assert.deepEqual(terraformCloudSettings({}, { TFC_ORGANIZATION: "acme" }), {
      hostname: "https://app.terraform.io",
      organization: "acme",
      prefix: "",
      tags: [],
      tagsAllowlist: [],
      tagsDenylist: [],
      runTimeoutMs: 30 * 60_000,
      lockTimeoutMs: 5 * 60_000,
      pollIntervalMs: 1_000,
    });
    assert.equal(terraformCloudSettings({ hostname: "tfe.local" }, { TFC_HOSTNAME: "other" }).hostname, "tfe.local");
    assert.equal(terraformCloudSettings({}, { TFC_HOSTNAME: "other" }).hostname, "other");
  });
});
