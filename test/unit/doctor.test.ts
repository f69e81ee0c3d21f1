import { describe, it, after } from "node:test";
import assert from "node:assert/strict";
import { chmod, mkdtemp, rm, writeFile } from "node:fs/promises";
import { createServer } from "node:net";
import { createServer as createHttpServer } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ProbeAnswer as ConsulAnswer, ConsulProbe as ConsulHttp } from "../../src/doctor/consul-probe.ts";
import { CtsError } from "../../src/errors/cts-error.ts";
import { consulKv, services, schedule, Task, type TaskScope } from "../../src/index.ts";
import type { Condition, TaskInputs } from "../../src/task/conditions.ts";
import { doctorHint, formatCheck } from "../../src/doctor/check.ts";
import { checkConsulReachable, checkSession, checkStateWrite, checkTaskReads } from "../../src/doctor/consul-checks.ts";
import { checkApiPort, checkProviders, checkTerraformBinary, checkWorkingDir } from "../../src/doctor/local-checks.ts";
import { checkVault } from "../../src/doctor/vault-checks.ts";
import { createCommandRunner } from "../../src/terraform/command-runner.ts";
import type { VaultUse } from "../../src/config/vault-settings.ts";
import type { VaultClient } from "../../src/vault/client.ts";

/** A Consul behind the ConsulHttp interface: `answer` decides per method and path of Consul's HTTP API. */
function fakeConsul(answer: (method: string, path: string) => Partial<ConsulAnswer> | Error): ConsulHttp & { calls: string[] } {
  const calls: string[] = [];
  const ask = async (method: string, path: string): Promise<ConsulAnswer> => {
    calls.push(`${method} ${path}`);
    const a = answer(method, path);
    if (a instanceof Error) throw a;
    return { status: 200, body: "", ...a };
  };
  return {
    calls,
    url: () => "http://127.0.0.1:8500",
    leader: () => ask("GET", "/v1/status/leader"),
    agentSelf: () => ask("GET", "/v1/agent/self"),
    putKey: (key) => ask("PUT", `/v1/kv/${key}`),
    deleteKey: (key) => ask("DELETE", `/v1/kv/${key}`),
    createSession: () => ask("PUT", "/v1/session/create"),
    destroySession: (id) => ask("PUT", `/v1/session/destroy/${id}`),
  };
}

class Reader<C extends Condition> extends Task<C, TaskInputs> {
  constructor(name: string, condition: C) {
    super({ name, condition });
  }
  synthesize(_scope: TaskScope): void {}
}

const tmp = await mkdtemp(join(tmpdir(), "cts-doctor-"));
after(() => rm(tmp, { recursive: true, force: true }));

/** The driver's runner as the doctor makes it, with `env` as the driver's base environment; closed after the test file. */
function runnerWith(env: Record<string, string>, more: { pluginCacheDir?: string; backendEnv?: Record<string, string> } = {}) {
  const runner = createCommandRunner({ binary: "", workingDir: join(tmp, "work"), env, ...more }, () => {});
  after(() => runner.close());
  return runner;
}

describe("cts doctor checks", () => {
  it("passes Consul with a leader and names the address", async () => {
    const r = await checkConsulReachable(fakeConsul((_m, path) => (path === "/v1/status/leader" ? { body: '"127.0.0.1:8300"' } : { status: 403, body: "Permission denied" })));
    assert.equal(formatCheck(r), "✓ consul: reachable at http://127.0.0.1:8500 (leader 127.0.0.1:8300)");
  });

  it("tells how to start or point at Consul when it is unreachable", async () => {
    const r = await checkConsulReachable(fakeConsul(() => new Error("connect ECONNREFUSED 127.0.0.1:8500")));
    assert.equal(r.ok, false);
    assert.match(formatCheck(r), /^✗ consul: cannot reach .*ECONNREFUSED.*Fix: start a Consul agent .*CONSUL_HTTP_ADDR/);
  });

  it("asks for a valid token when Consul refuses or does not know it", async () => {
    const r = await checkConsulReachable(fakeConsul(() => ({ status: 403, body: "ACL not found" })));
    assert.match(formatCheck(r), /✗ consul: .*refused the token.*Fix: set a valid ACL token in consul\.token/);
    const unknown = await checkConsulReachable(fakeConsul((_m, path) => (path === "/v1/status/leader" ? { body: '"127.0.0.1:8300"' } : { status: 403, body: "ACL not found" })));
    assert.match(formatCheck(unknown), /✗ consul: .*does not know the ACL token.*Fix: set a valid ACL token/);
  });

  it("asks for basic auth credentials when a proxy in front of Consul answers 401", async () => {
    const r = await checkConsulReachable(fakeConsul(() => ({ status: 401, body: "<html>401 Authorization Required</html>" })));
    assert.match(formatCheck(r), /✗ consul: .*asks for HTTP basic auth \(HTTP 401\).*Fix: set consul\.auth \{ username, password \}.*CONSUL_HTTP_AUTH=user:pass/);
  });

  it("names the missing service:read and the policy rule when a task's read is denied", async () => {
    const denied = new CtsError("CONSUL_PERMISSION_DENIED", "external", "Consul filtered instances of service 'web' by ACLs");
    const r = await checkTaskReads(new Reader("pool", services({ names: ["web"] })), async () => {
      throw denied;
    });
    assert.equal(r.name, "reads:pool");
    assert.match(formatCheck(r), /✗ reads:pool: cannot read services 'web': Consul filtered.*Fix: .*service_prefix "" \{ policy = "read" \} and node_prefix/);
  });

  it("names the KV rule for a denied KV read, and passes a task whose reads succeed", async () => {
    const kvTask = new Reader("flags", consulKv({ path: "app/flags", recurse: true }));
    const denied = await checkTaskReads(kvTask, async () => {
      throw new CtsError("CONSUL_PERMISSION_DENIED", "external", "Consul denied reading KV (HTTP 403)");
    });
    assert.match(denied.fix!, /key_prefix "app\/flags" \{ policy = "read" \}/);
    const ok = await checkTaskReads(kvTask, async () => ({}));
    assert.equal(formatCheck(ok), "✓ reads:flags: may read KV 'app/flags' (recursive)");
    const sched = await checkTaskReads(new Reader("nightly", schedule({ cron: "0 3 * * *" })), async () => assert.fail("schedule tasks read nothing"));
    assert.ok(sched.ok);
  });

  it("writes then deletes a probe key under the state path, and names key_prefix write when denied", async () => {
    const consul = fakeConsul(() => ({ body: "true" }));
    assert.ok((await checkStateWrite(consul, "consul-terraform-sync/terraform")).ok);
    assert.match(consul.calls[0]!, /^PUT \/v1\/kv\/consul-terraform-sync\/terraform\/cts-doctor-[0-9a-f]+$/);
    assert.equal(consul.calls[1], consul.calls[0]!.replace("PUT", "DELETE"));
    const r = await checkStateWrite(fakeConsul(() => ({ status: 403, body: "Permission denied" })), "consul-terraform-sync/terraform");
    assert.match(formatCheck(r), /✗ state: cannot write KV .*HTTP 403.*Fix: grant the token key_prefix "consul-terraform-sync\/terraform" \{ policy = "write" \}/);
  });

  it("creates and destroys a session, and names session_prefix write when denied", async () => {
    const consul = fakeConsul((_m, path) => ({ body: path === "/v1/session/create" ? '{"ID":"abc"}' : "true" }));
    assert.ok((await checkSession(consul)).ok);
    assert.deepEqual(consul.calls, ["PUT /v1/session/create", "PUT /v1/session/destroy/abc"]);
    const r = await checkSession(fakeConsul(() => ({ status: 403, body: "Permission denied" })));
    assert.match(r.fix!, /session_prefix "" \{ policy = "write" \}/);
  });

  it("reports a configured binary that is missing, with the install fix", async () => {
    const { result } = await checkTerraformBinary(join(tmp, "no-such-tofu"), runnerWith({ PATH: "" }));
    assert.match(formatCheck(result), /✗ terraform: '.*no-such-tofu' not found\. Fix: fix driver\.terraform\.binary .*install OpenTofu/);
    const none = await checkTerraformBinary(undefined, runnerWith({ PATH: tmp }));
    assert.match(formatCheck(none.result), /✗ terraform: 'tofu' and 'terraform' not found on PATH\. Fix: install OpenTofu/);
  });

  it("finds terraform on PATH when there is no tofu, and prints its version", async () => {
    const bin = join(tmp, "terraform");
    await writeFile(bin, '#!/bin/sh\necho \'{"terraform_version":"1.5.7"}\'\n');
    await chmod(bin, 0o755);
    const { result, path } = await checkTerraformBinary(undefined, runnerWith({ PATH: tmp }));
    assert.equal(path, bin);
    assert.equal(formatCheck(result), `✓ terraform: ${bin} (version 1.5.7)`);
  });

  it("reports providers that cannot be installed with the registry/mirror fix", async () => {
    const bin = join(tmp, "failing-tofu");
    await writeFile(bin, "#!/bin/sh\necho 'Error: Failed to query available provider packages' >&2\nexit 1\n");
    await chmod(bin, 0o755);
    const r = await checkProviders(runnerWith({ PATH: "/usr/bin:/bin" }), bin, { local: { source: "hashicorp/local", version: "2.6.1" } }, { scratchRoot: tmp });
    assert.match(formatCheck(r), /✗ providers: .* init could not install local: Error: Failed to query.*Fix: .*registry.*provider_installation mirror/);
  });

  it("runs its providers' init through the driver's runner: the driver's environment, a process group of its own, recorded for the reaper", async () => {
    // The fake binary reports what it was started with on stderr, as an error the check quotes.
    const bin = join(tmp, "reporting-tofu");
    const groups = join(tmp, "work", ".cts-processes");
    await writeFile(
      bin,
      // The runner records the group right after the start: the script looks for a while.
      `#!/bin/sh\nrecorded=0\nfor i in 1 2 3 4 5 6 7 8 9 10; do cat ${groups}/*.json 2>/dev/null | grep -q '"command":"reporting-tofu init"' && recorded=1 && break; sleep 0.1; done\n` +
        `echo "Error: base=$CTS_BASE backend=$CONSUL_HTTP_TOKEN cache=$TF_PLUGIN_CACHE_DIR automation=$TF_IN_AUTOMATION group=$(ps -o pgid= -p $$ | tr -d ' ') pid=$$ recorded=$recorded args=$*" >&2\nexit 1\n`,
    );
    await chmod(bin, 0o755);
    const runner = runnerWith({ PATH: "/usr/bin:/bin", CTS_BASE: "from-consul" }, { pluginCacheDir: join(tmp, "cache"), backendEnv: { CONSUL_HTTP_TOKEN: "state-token" } });
    const r = await checkProviders(runner, bin, { local: { source: "hashicorp/local", version: "2.6.1" } }, { scratchRoot: tmp });
    const seen = /base=(\S*) backend=(\S*) cache=(\S*) automation=(\S*) group=(\d+) pid=(\d+) recorded=(\d+) args=(.*?)\.? Fix:/.exec(formatCheck(r));
    assert.ok(seen, formatCheck(r));
    const [, base, backend, cache, automation, group, pid, recorded, args] = seen;
    assert.deepEqual([base, backend, cache, automation], ["from-consul", "state-token", join(tmp, "cache"), "1"], "the environment every command of the driver gets");
    assert.equal(group, pid, "the init leads a process group of its own");
    assert.equal(recorded, "1", "the group file records the init while it runs");
    assert.equal(args!.trim(), "init -backend=false -input=false -no-color");
  });

  it("reports a working dir that cannot be written", async () => {
    const file = join(tmp, "a-file");
    await writeFile(file, "");
    const r = await checkWorkingDir(join(file, "sync-tasks"));
    assert.match(formatCheck(r), /✗ working-dir: cannot write in .*ENOTDIR.*Fix: set driver\.terraform\.workingDir/);
    assert.ok((await checkWorkingDir(join(tmp, "sync-tasks"))).ok);
  });

  it("reports an API port in use and how to pick another", async () => {
    const server = createServer();
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    try {
      const port = (server.address() as { port: number }).port;
      const r = await checkApiPort("127.0.0.1", port);
      assert.match(formatCheck(r), new RegExp(`✗ api-port: 127\\.0\\.0\\.1:${port} is in use.*Fix: .*set api\\.port`));
    } finally {
      await new Promise((r) => server.close(r));
    }
  });

  it("recognises this config's running daemon on the API port (it holds its own port), and tells another cts from it", async () => {
    let id = "cts-mine";
    const server = createHttpServer((_req, res) => res.end(JSON.stringify({ task_summary: { status: {}, enabled: {} }, instance: { id } })));
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    try {
      const port = (server.address() as { port: number }).port;
      const mine = await checkApiPort("127.0.0.1", port, { id: "cts-mine", https: false });
      assert.equal(mine.ok, true, formatCheck(mine));
      assert.match(formatCheck(mine), new RegExp(`✓ api-port: 127\\.0\\.0\\.1:${port} is held by this config's cts daemon \\(id 'cts-mine'\\)`));
      id = "cts-other";
      assert.match(formatCheck(await checkApiPort("127.0.0.1", port, { id: "cts-mine", https: false })), /✗ api-port: .* held by another cts daemon \(id 'cts-other'\).*Fix: stop that daemon/);
    } finally {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    }
    // Something else than cts on the port stays a failure.
    const plain = createHttpServer((_req, res) => res.end("hello"));
    await new Promise<void>((r) => plain.listen(0, "127.0.0.1", r));
    try {
      const port = (plain.address() as { port: number }).port;
      assert.match(formatCheck(await checkApiPort("127.0.0.1", port, { id: "cts-mine", https: false })), /✗ api-port: .* is in use/);
    } finally {
      plain.closeAllConnections();
      await new Promise((r) => plain.close(r));
    }
  });

  it("points the errors doctor can explain at `cts doctor`, and no others", () => {
    assert.match(doctorHint({ code: "CONSUL_UNREACHABLE" }), /Run `cts doctor`/);
    assert.match(doctorHint({ code: "TERRAFORM_FAILED", detail: { command: "init -input=false" } }), /cts doctor/);
    assert.equal(doctorHint({ code: "TERRAFORM_FAILED", detail: { command: "apply" } }), "");
    assert.equal(doctorHint({ code: "CONFIG_INVALID" }), "");
  });
});

describe("doctor's synthesis of every task with empty data", () => {
  it("keeps the place in the task's code when a task throws, though the message is cut short", async () => {
    const { requiredProviders } = await import("../../src/doctor/doctor.ts");
    class Thrower extends Task<Condition, TaskInputs> {
      constructor() {
        super({ name: "thrower", condition: services({ names: ["web"] }) });
      }
      synthesize(): void {
        throw new Error(`${"a very long explanation ".repeat(10)}`);
      }
    }
    const { notes } = requiredProviders({ config: { tasks: [new Thrower()] }, file: "cts.config.ts", dir: "." } as never);
    assert.equal(notes.length, 1);
    assert.match(notes[0]!, /^task 'thrower' was not synthesized with empty data: .* \(at test\/unit\/doctor\.test\.ts:\d+:\d+\)$/);
  });
});

describe("cts doctor's Vault checks", () => {
  const use: VaultUse = { settings: { address: "http://127.0.0.1:8200", token: "doctor-unit-token" }, unwrap: false, renew: true, defaultLeaseMs: 300_000 };
  /** A Vault behind the client interface: `caps` answers sys/capabilities-self (an Error: refused), `readable` the reads. */
  function fakeVault(caps: Record<string, string[]> | Error, readable: Set<string>): VaultClient & { reads: string[] } {
    const reads: string[] = [];
    return {
      reads,
      read: async (path) => {
        reads.push(path);
        if (!readable.has(path)) throw new CtsError("VAULT_PERMISSION_DENIED", "external", `Vault denied '${path}' (403).`);
        return { data: { v: "value-not-shown" }, leaseId: "", leaseDuration: 0, renewable: false };
      },
      renewLease: async () => ({ data: {}, leaseId: "", leaseDuration: 0, renewable: false }),
      renewSelf: async () => ({ ttl: 0, renewable: false }),
      lookupSelf: async () => ({ ttl: 3600, renewable: true }),
      capabilities: async () => {
        if (caps instanceof Error) throw caps;
        return caps;
      },
      unwrapToken: async () => {},
      token: () => "doctor-unit-token",
      setToken() {},
      close() {},
    };
  }
  const paths = new Map([
    ["secret/data/app", ["app"]],
    ["secret/data/db", ["app", "db"]],
  ]);

  it("asks what the token may do (no secret read) and fails each denied path with the rule to grant", async () => {
    const client = fakeVault({ "secret/data/app": ["read", "list"], "secret/data/db": ["deny"] }, new Set());
    const r = await checkVault({ use, paths, client });
    assert.deepEqual(
      r.map((x) => [x.name, x.ok]),
      [["vault", true], ["vault-token", true], ["vault-read:secret/data/app", true], ["vault-read:secret/data/db", false]],
    );
    assert.equal(r[3]!.detail, "the token may not read 'secret/data/db' (read by tasks 'app', 'db')");
    assert.deepEqual(client.reads, [], "no secret was read");
  });

  it("reads each path when the token may not ask sys/capabilities-self, and shows no value", async () => {
    const client = fakeVault(new CtsError("VAULT_PERMISSION_DENIED", "external", "Vault denied the capabilities (403)."), new Set(["secret/data/app"]));
    const r = await checkVault({ use, paths, client });
    assert.deepEqual(r.slice(2).map((x) => [x.name, x.ok]), [["vault-read:secret/data/app", true], ["vault-read:secret/data/db", false]]);
    assert.ok(!JSON.stringify(r).includes("value-not-shown"));
  });

  it("says a template reads a secret and no Vault is configured; says nothing when neither", async () => {
    const r = await checkVault({ use: undefined, paths });
    assert.equal(r.length, 1);
    assert.equal(r[0]!.ok, false);
    assert.match(r[0]!.fix!, /vault \{ address/);
    assert.deepEqual(await checkVault({ use: undefined, paths: new Map() }), []);
  });

  it("does not call Vault with a wrapped token (unwrapping would use it up)", async () => {
    const client = fakeVault({}, new Set());
    client.lookupSelf = async () => {
      throw new Error("must not be called");
    };
    const r = await checkVault({ use: { ...use, unwrap: true }, paths, client });
    assert.deepEqual(r.map((x) => [x.name, x.ok]), [["vault", true]]);
    assert.match(r[0]!.detail, /unwrap_token/);
  });
});
