import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { CtsError } from "../../src/errors/cts-error.ts";
import { createWarmPool, type LaunchSpec, type ProviderLauncher, type ProviderServer, type WarmLimits } from "../../src/terraform/warm-pool.ts";
import { createWarmProviders, isTransportFailure } from "../../src/terraform/warm-providers.ts";
import { parseLockFile } from "../../src/terraform/installed-providers.ts";
import { parseReattachLine, providerEnv } from "../../src/terraform/provider-process.ts";

/** A fake provider process: records stops, can crash on demand. */
class FakeServer implements ProviderServer {
  exited = false;
  stopped = false;
  rss = 30;
  private listeners: Array<() => void> = [];
  constructor(readonly pid: number) {}
  get reattach() {
    return { Protocol: "grpc", ProtocolVersion: 5, Pid: this.pid, Test: true, Addr: { Network: "unix", String: `/tmp/plugin${this.pid}` } };
  }
  rssMb() {
    return this.exited ? undefined : this.rss;
  }
  onExit(l: () => void) {
    if (this.exited) l();
    else this.listeners.push(l);
  }
  crash() {
    this.exited = true;
    for (const l of this.listeners.splice(0)) l();
  }
  async stop() {
    this.stopped = true;
    this.crash();
  }
}

function fakeLauncher(opts: { fail?: boolean } = {}) {
  const launched: FakeServer[] = [];
  let next = 1000;
  const launcher: ProviderLauncher = {
    async launch() {
      if (opts.fail) throw new Error("no reattach line within 15000 ms");
      const s = new FakeServer(next++);
      launched.push(s);
      return s;
    },
  };
  return { launcher, launched };
}

const limits = (l: Partial<WarmLimits> = {}): WarmLimits => ({ maxProcesses: 4, maxRunsPerProcess: 100, idleTimeoutMs: 60_000, maxRssMb: 512, ...l });
const spec = (over: Partial<LaunchSpec> = {}): LaunchSpec => ({ binary: "/cache/terraform-provider-local_v2.9.0", cwd: "/work/web", env: {}, envHash: "h", task: "web", ...over });

describe("warm provider pool", () => {
  it("gives the same process back to the next command of the same task", async () => {
    const { launcher, launched } = fakeLauncher();
    const pool = createWarmPool({ launcher, limits: limits() });
    const a = await pool.checkout(spec());
    a!.release("ok");
    const b = await pool.checkout(spec());
    assert.equal(b!.server.pid, a!.server.pid);
    assert.equal(launched.length, 1);
    await pool.close();
  });

  it("never lets two commands share a process", async () => {
    const { launcher } = fakeLauncher();
    const pool = createWarmPool({ launcher, limits: limits() });
    const [a, b] = await Promise.all([pool.checkout(spec()), pool.checkout(spec())]);
    assert.notEqual(a!.server.pid, b!.server.pid);
    await pool.close();
  });

  it("keeps tasks with other folders or credentials apart", async () => {
    const { launcher } = fakeLauncher();
    const pool = createWarmPool({ launcher, limits: limits() });
    const a = await pool.checkout(spec());
    a!.release("ok");
    const other = await pool.checkout(spec({ cwd: "/work/db", task: "db" }));
    const otherEnv = await pool.checkout(spec({ envHash: "rotated" }));
    assert.notEqual(other!.server.pid, a!.server.pid);
    assert.notEqual(otherEnv!.server.pid, a!.server.pid);
    await pool.close();
  });

  it("answers none when every process is busy at the bound, so the run launches normally", async () => {
    const { launcher } = fakeLauncher();
    const pool = createWarmPool({ launcher, limits: limits({ maxProcesses: 1 }) });
    const a = await pool.checkout(spec());
    assert.equal(await pool.checkout(spec({ cwd: "/work/db" })), undefined);
    a!.release("ok");
    // An idle process of another task makes room (least recently used goes).
    const b = await pool.checkout(spec({ cwd: "/work/db" }));
    assert.ok(b);
    assert.equal((a!.server as FakeServer).stopped, true);
    await pool.close();
  });

  it("recycles a process after maxRunsPerProcess runs", async () => {
    const { launcher, launched } = fakeLauncher();
    const pool = createWarmPool({ launcher, limits: limits({ maxRunsPerProcess: 2 }) });
    for (let i = 0; i < 3; i++) (await pool.checkout(spec()))!.release("ok");
    assert.equal(launched.length, 2);
    assert.equal(launched[0]!.stopped, true);
    await pool.close();
  });

  it("recycles a process whose resident size passed maxRssMb", async () => {
    const { launcher, launched } = fakeLauncher();
    const pool = createWarmPool({ launcher, limits: limits({ maxRssMb: 100 }) });
    const a = await pool.checkout(spec());
    launched[0]!.rss = 150;
    a!.release("ok");
    assert.equal(launched[0]!.stopped, true);
    assert.deepEqual(pool.processes(), []);
    await pool.close();
  });

  it("ends a process idle for idleTimeout", async (t) => {
    t.mock.timers.enable({ apis: ["setTimeout"] });
    const { launcher, launched } = fakeLauncher();
    const pool = createWarmPool({ launcher, limits: limits({ idleTimeoutMs: 1000 }) });
    (await pool.checkout(spec()))!.release("ok");
    t.mock.timers.tick(1001);
    assert.equal(launched[0]!.stopped, true);
    await pool.close();
  });

  it("keeps idle processes through a quiet spell while the daemon keeps warm, and times them out again after", async (t) => {
    t.mock.timers.enable({ apis: ["setTimeout"] });
    const { launcher, launched } = fakeLauncher();
    const pool = createWarmPool({ launcher, limits: limits({ idleTimeoutMs: 1000 }) });
    (await pool.checkout(spec()))!.release("ok");
    pool.keepWarm(true);
    t.mock.timers.tick(10_000);
    assert.equal(launched[0]!.stopped, false, "kept past the idle timeout");
    const again = await pool.checkout(spec());
    assert.equal(again!.server, launched[0], "the next change finds its provider running");
    again!.release("ok");
    pool.keepWarm(false);
    t.mock.timers.tick(1001);
    assert.equal(launched[0]!.stopped, true, "let go: idle for the timeout, it ends");
    await pool.close();
  });

  it("leaves an idle timeout the user set alone when the daemon keeps warm", async (t) => {
    t.mock.timers.enable({ apis: ["setTimeout"] });
    const { launcher, launched } = fakeLauncher();
    const pool = createWarmPool({ launcher, limits: limits({ idleTimeoutMs: 1000 }), idleTimeoutSet: true });
    (await pool.checkout(spec()))!.release("ok");
    pool.keepWarm(true);
    t.mock.timers.tick(1001);
    assert.equal(launched[0]!.stopped, true);
    await pool.close();
  });

  it("marks a binary cold when it cannot serve reattach, crashes or breaks a run", async () => {
    const failing = createWarmPool({ launcher: fakeLauncher({ fail: true }).launcher, limits: limits() });
    assert.equal(await failing.checkout(spec()), undefined);
    assert.match(failing.coldReason(spec().binary)!, /no reattach line/);

    const { launcher, launched } = fakeLauncher();
    const pool = createWarmPool({ launcher, limits: limits() });
    (await pool.checkout(spec()))!.release("ok");
    launched[0]!.crash();
    assert.match(pool.coldReason(spec().binary)!, /exited unexpectedly/);
    assert.equal(await pool.checkout(spec()), undefined);

    const pool2 = createWarmPool({ launcher: fakeLauncher().launcher, limits: limits() });
    (await pool2.checkout(spec()))!.release("broken");
    assert.equal(await pool2.checkout(spec()), undefined);
    await Promise.all([failing.close(), pool.close(), pool2.close()]);
  });

  it("ends a deleted task's processes and, on close, all of them", async () => {
    const { launcher, launched } = fakeLauncher();
    const pool = createWarmPool({ launcher, limits: limits() });
    (await pool.checkout(spec()))!.release("ok");
    const busy = await pool.checkout(spec({ cwd: "/work/db" }));
    await pool.cool("/work/web");
    assert.equal(launched[0]!.stopped, true);
    assert.equal(launched[1]!.stopped, false);
    await pool.close();
    assert.equal(launched[1]!.stopped, true);
    busy!.release("ok");
    assert.equal(await pool.checkout(spec()), undefined, "a closed pool launches nothing");
  });
});

describe("warm providers for a command", () => {
  it("keys TF_REATTACH_PROVIDERS by the lock file's address and retries only transport failures", async () => {
    const pool = createWarmPool({ launcher: fakeLauncher().launcher, limits: limits() });
    const warm = createWarmProviders(pool, async () => [{ address: "registry.opentofu.org/hashicorp/local", version: "2.9.0", binary: "/cache/p" }]);
    const c = await warm.checkout("web", "/work/web", { PATH: "/bin" });
    const reattach = JSON.parse(c!.env.TF_REATTACH_PROVIDERS!) as Record<string, { Pid: number }>;
    assert.deepEqual(Object.keys(reattach), ["registry.opentofu.org/hashicorp/local"]);
    assert.equal(reattach["registry.opentofu.org/hashicorp/local"]!.Pid, c!.pids[0]);
    const transport = new CtsError("TERRAFORM_FAILED", "external", "tofu apply failed", { detail: { errors: 'failed to instantiate provider "registry.opentofu.org/hashicorp/local" to obtain schema: reattachment process not found' } });
    const config = new CtsError("TERRAFORM_FAILED", "external", "tofu apply failed", { detail: { errors: "Invalid reference" } });
    assert.equal(c!.isWarmFailure(transport), true);
    assert.equal(c!.isWarmFailure(config), false);
    c!.release(false);
    assert.equal(await warm.checkout("web", "/work/web", { TF_REATTACH_PROVIDERS: "{}" }), undefined, "a user's own reattach setting wins");
    await pool.close();
  });

  it("recognizes Terraform's words for a lost provider", () => {
    assert.equal(isTransportFailure("rpc error: code = Unavailable desc = connection error: desc = \"transport: Error while dialing: dial unix /tmp/plugin1: connect: connection refused\""), true);
    assert.equal(isTransportFailure("Error: Invalid value for variable"), false);
  });

  it("reads addresses and versions from a lock file and the reattach line of -debug", () => {
    const lock = `provider "registry.opentofu.org/hashicorp/local" {\n  version = "2.9.0"\n  hashes = [\n    "h1:x=",\n  ]\n}\n\nprovider "../../evil/x" {\n  version = "1.0.0"\n}\n`;
    assert.deepEqual(parseLockFile(lock), [{ address: "registry.opentofu.org/hashicorp/local", version: "2.9.0" }]);
    const line = `\tTF_REATTACH_PROVIDERS='{"registry.terraform.io/hashicorp/local":{"Protocol":"grpc","ProtocolVersion":5,"Pid":15890,"Test":true,"Addr":{"Network":"unix","String":"/tmp/plugin45867226"}}}'`;
    assert.equal(parseReattachLine(line)?.Pid, 15890);
    assert.equal(parseReattachLine("Provider started."), undefined);
  });

  it("starts warm providers with the SDK's trace logging off, unless someone asked for provider logs", () => {
    assert.deepEqual(providerEnv({ PATH: "/bin" }), { PATH: "/bin", TF_LOG_SDK: "INFO", TF_LOG_PROVIDER: "INFO" });
    assert.deepEqual(providerEnv({ TF_LOG: "trace" }), { TF_LOG: "trace" });
    assert.deepEqual(providerEnv({ TF_LOG_SDK: "DEBUG" }), { TF_LOG_SDK: "DEBUG", TF_LOG_PROVIDER: "INFO" });
  });
});
