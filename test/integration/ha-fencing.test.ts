import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { copyFile, mkdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { startConsul, type ConsulAgent } from "../support/consul.ts";
import { startCountingProxy, type CountingProxy } from "../support/counting-proxy.ts";
import { tempDir, waitFor } from "../support/cts.ts";
import { startCtsProcess, writeHaConfig, type CtsProcess } from "../support/cts-process.ts";
import { tools } from "../support/tools.ts";

const TTL_MS = 3_000;
const read = (p: string) => readFile(p, "utf8").catch(() => "");
const ps = () => new Promise<string>((r) => execFile("ps", ["-eo", "args"], (_e, out) => r(out)));

function run(cmd: string, args: string[], opts: { cwd: string; env: Record<string, string> }): Promise<{ code: number; out: string }> {
  return new Promise((resolve) => {
    execFile(cmd, args, { cwd: opts.cwd, env: { ...process.env, ...opts.env } }, (err, stdout, stderr) =>
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, out: `${stdout}\n${stderr}` }),
    );
  });
}

describe("fencing: a leader cut off from Consul, and the Terraform state lock", () => {
  let consul: ConsulAgent;
  let proxy: CountingProxy;
  let tmp: { dir: string; cleanup(): Promise<void> };
  let cutOff: CtsProcess;
  let healthy: CtsProcess;
  let members: string;
  let applies: string;

  before(async () => {
    consul = await startConsul({ extraConfig: 'session_ttl_min = "1s"' });
    proxy = await startCountingProxy(consul.url);
    tmp = await tempDir("cts-ha-fence-");
    members = join(tmp.dir, "members.txt");
    applies = join(tmp.dir, "applies.log");
    await consul.register({ Name: "web", ID: "web-1", Address: "10.0.0.1", Port: 80 });
    const task = (seconds: number) => `new AppendMembers("slow", ${JSON.stringify(members)}, ${JSON.stringify(applies)}, ${seconds})`;
    // The instance that will be cut off reaches Consul (and its Terraform the state) only through the proxy.
    // Its apply sleeps an unusual 23 s so its provisioner is easy to find.
    const p = await writeHaConfig(join(tmp.dir, "cts-p"), { consulAddress: proxy.address, id: "cts-p", cluster: "fence", sessionTtl: "3s", tasks: [task(23)] });
    const q = await writeHaConfig(join(tmp.dir, "cts-q"), { consulAddress: consul.address, id: "cts-q", cluster: "fence", sessionTtl: "3s", tasks: [task(6)] });
    cutOff = startCtsProcess(p, { name: "cts-p" });
    await cutOff.waitForLine(/ha: acquired leadership lock: id=cts-p/, 60_000);
    healthy = startCtsProcess(q, { name: "cts-q" });
    await healthy.waitForLine(/ha: joining cluster 'fence' as 'cts-q'/, 60_000);
  });
  after(async () => {
    await Promise.all([cutOff, healthy].map((p) => p?.terminate(15_000)));
    await proxy?.stop().catch(() => undefined);
    await consul?.stop();
    await tmp?.cleanup();
  });

  it("a leader cut off from Consul stops its apply before a follower can lead (the fence time itself: ha-session unit test); the follower then applies", async () => {
    await cutOff.waitForLine(/\[slow\].*(Provisioning|Creating)/, 60_000);
    await waitFor(async () => (await ps()).includes("sleep 23"), 20_000, "cts-p's provisioner to run");
    const marks = { p: cutOff.mark(), q: healthy.mark() };
    const cutAt = Date.now();
    await proxy.stop();

    const lost = await cutOff.waitForLine(/ha: lost leadership: no session renewal succeeded/, 60_000, marks.p);
    const took = await healthy.waitForLine(/ha: acquired leadership lock: id=cts-q/, 60_000, marks.q);
    console.log(`# cut off at 0 ms; old leader fenced itself at ${lost.at - cutAt} ms; new leader at ${took.at - cutAt} ms (TTL ${TTL_MS} ms)`);
    // Order, not durations: the old leader fenced itself before the new one took the lock; when
    // each happened (and the safety margin between them) is printed above.
    assert.ok(took.at > lost.at, "the new leader took over only after the old one had stopped");
    // The run ends as fenced: stopped because this instance lost the lock it ran the task under.
    await cutOff.waitForLine(/task 'slow':.*(cancelled|was stopped because this instance lost the lock)/, 60_000, marks.p);
    await waitFor(async () => !(await ps()).includes("sleep 23"), 60_000, "cts-p's provisioner to be stopped");

    // The cut-off apply's Terraform still holds the state lock until its own Consul session
    // expires; the new leader retries until it can apply.
    const retried = Date.now();
    await waitFor(async () => (await read(applies)) === "web-1\n", 90_000, "cts-q to apply after the old state lock expired");
    console.log(`# the new leader applied ${Date.now() - cutAt} ms after the cut (${Date.now() - retried} ms of state-lock retries)`);
    assert.equal(await read(members), "web-1\n");
    // The driver now waits out the lock itself (-lock-timeout and its own retries); the HA retry
    // is left for locks held longer than that. Either one must have said it waited for the lock.
    await healthy.waitForLine(/ha: task 'slow': its Terraform state is locked|task 'slow': waiting for the Terraform state lock held by \S+/, 30_000, marks.q);
    assert.doesNotMatch(cutOff.logs().slice(marks.p), /ha: acquired leadership lock/, "the cut-off instance cannot lead again without Consul");
  });

  it("a second Terraform apply of the same task fails on the state lock while the leader's apply runs", async () => {
    const mark = healthy.mark();
    await consul.register({ Name: "web", ID: "web-2", Address: "10.0.0.2", Port: 80 });
    await healthy.waitForLine(/\[slow\].*(Provisioning|Creating)/, 30_000, mark);
    // What another instance would run: the same JSON, the same backend, the same workspace.
    const manual = join(tmp.dir, "manual");
    await mkdir(manual, { recursive: true });
    await copyFile(join(tmp.dir, "cts-q", "sync-tasks", "slow", "main.tf.json"), join(manual, "main.tf.json"));
    const t = tools();
    const env = { CONSUL_HTTP_ADDR: consul.url, TF_CLI_CONFIG_FILE: t.cliConfig, TF_IN_AUTOMATION: "1" };
    // init in the default workspace (as the driver does): init would lock the task's state too.
    const init = await run(t.tofu, ["init", "-input=false", "-no-color"], { cwd: manual, env });
    assert.equal(init.code, 0, init.out);
    const second = await run(t.tofu, ["apply", "-auto-approve", "-input=false", "-no-color", "-lock-timeout=0s"], { cwd: manual, env: { ...env, TF_WORKSPACE: "slow" } });
    assert.notEqual(second.code, 0, second.out);
    assert.match(second.out, /failed to lock state in Consul: Lock Info:[\s\S]*Operation: OperationTypeApply/);
    await waitFor(async () => (await read(applies)).includes("web-1,web-2"), 30_000, "the leader's apply to finish");
    await healthy.waitForLine(/task 'slow': applied/, 60_000, mark);
    assert.deepEqual((await read(applies)).trim().split("\n"), ["web-1", "web-1,web-2"], "the leader's apply went through untouched");
  });
});
