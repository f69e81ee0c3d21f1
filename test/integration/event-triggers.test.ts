import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdir, readFile, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { startConsul, type ConsulAgent } from "../support/consul.ts";
import { startRuntime, tempDir, waitFor, writeConfig, type TestRuntime } from "../support/cts.ts";
import { tools } from "../support/tools.ts";

// Event triggers (CTS #1056, #154) on a real Consul agent and real OpenTofu: each task is a
// ModuleTask of modules/cts-echo, which writes the services it received into a file.

const ECHO = fileURLToPath(new URL("../../modules/cts-echo", import.meta.url));
const RECORD = fileURLToPath(new URL("../fixtures/cts-modules/record", import.meta.url));
const web = (id: string, extra: Record<string, unknown> = {}) => ({ Name: "web", ID: id, Port: 80, ...extra });
/** The instance IDs a task's module last received (from the file it wrote). */
const received = async (path: string) =>
  Object.values(JSON.parse(await readFile(path, "utf8").catch(() => "{}")) as Record<string, { id: string }>)
    .map((s) => s.id)
    .sort()
    .join(",");

describe("event triggers: a services condition that runs its task only on some changes (real Consul, real OpenTofu)", () => {
  let consul: ConsulAgent;
  let tmp: { dir: string; cleanup(): Promise<void> };
  let rt: TestRuntime;
  const TASKS = ["on-register", "on-deregister", "on-count"] as const;
  const out = (task: string) => join(tmp.dir, `${task}.json`);
  const runs = (task: string) => rt.controller.runCount(task);
  const counts = () => Object.fromEntries(TASKS.map((t) => [t, runs(t)]));

  /** Makes one change in Consul and waits until every task's trigger has seen it and every run it caused has ended. */
  const change = async (what: string, act: () => Promise<unknown>) => {
    const seen = TASKS.map((t) => rt.controller.changeCount(t));
    await act();
    await waitFor(() => TASKS.every((t, i) => rt.controller.changeCount(t) > seen[i]!), 30_000, `${what} to reach every task`);
    await rt.controller.whenIdle();
  };

  before(async () => {
    consul = await startConsul();
    tmp = await tempDir();
    await consul.register(web("web-1"));
    const task = (name: string, trigger: string) =>
      `new ModuleTask({ name: ${JSON.stringify(name)}, condition: services({ names: ["web"], trigger: ${trigger} }), module: ${JSON.stringify(ECHO)}, variables: { output_path: ${JSON.stringify(out(name))} } })`;
    const file = await writeConfig(tmp.dir, {
      consulAddress: consul.address,
      extra: "bufferPeriod: false,",
      tasks: [task("on-register", '"register"'), task("on-deregister", '"deregister"'), task("on-count", "{ above: 2, below: 1 }")],
    });
    rt = await startRuntime(file);
    await waitFor(() => TASKS.every((t) => runs(t) >= 1), 180_000, "every task's start-up run");
    await rt.controller.whenIdle();
    for (const t of TASKS) assert.equal(await received(out(t)), "web-1", `${t}: the start-up run, as every task has (CTS runs each task once at start)`);
  });
  after(async () => {
    await rt?.close();
    await consul?.stop();
    await tmp?.cleanup();
  });

  it("a register task runs when an instance registers and not when one deregisters; a deregister task the opposite", async () => {
    let before = counts();
    await change("web-2 registering", () => consul.register(web("web-2")));
    assert.equal(runs("on-register"), before["on-register"]! + 1, "the registration ran the register task");
    assert.equal(await received(out("on-register")), "web-1,web-2");
    assert.equal(runs("on-deregister"), before["on-deregister"], "the deregister task did not run");
    assert.equal(await received(out("on-deregister")), "web-1");

    before = counts();
    await change("web-2 deregistering", () => consul.deregister("web-2"));
    assert.equal(runs("on-deregister"), before["on-deregister"]! + 1, "the deregistration ran the deregister task");
    assert.equal(await received(out("on-deregister")), "web-1", "with the full current data");
    assert.equal(runs("on-register"), before["on-register"], "the register task did not run");
    assert.equal(await received(out("on-register")), "web-1,web-2", "and still holds what it last applied");
  });

  it("an instance whose check turns critical counts as deregistered (the passing-only data loses it), and as registered when it passes again", async () => {
    await change("web-3 registering", () => consul.register(web("web-3", { Check: { CheckID: "web-3-ttl", TTL: "10m", Status: "passing" } })));
    let before = counts();
    await change("web-3 failing its check", () => consul.api("PUT", "/v1/agent/check/fail/web-3-ttl"));
    assert.equal(runs("on-deregister"), before["on-deregister"]! + 1);
    assert.equal(await received(out("on-deregister")), "web-1");
    assert.equal(runs("on-register"), before["on-register"]);
    before = counts();
    await change("web-3 passing again", () => consul.api("PUT", "/v1/agent/check/pass/web-3-ttl"));
    assert.equal(runs("on-register"), before["on-register"]! + 1);
    assert.equal(await received(out("on-register")), "web-1,web-3");
    assert.equal(runs("on-deregister"), before["on-deregister"]);
    await change("web-3 deregistering", () => consul.deregister("web-3"));
  });

  it("a register task does not run when an instance only changes (same node and service ID, another port)", async () => {
    const before = counts();
    await change("web-1 moving to port 8080", () => consul.register(web("web-1", { Port: 8080 })));
    assert.equal(runs("on-register"), before["on-register"]);
    assert.equal(runs("on-deregister"), before["on-deregister"]);
    assert.equal(runs("on-count"), before["on-count"]);
  });

  it("a threshold task runs when the count crosses its line and not on changes that stay on one side", async () => {
    const count = () => runs("on-count");
    const start = count();
    await change("a second instance (1 → 2)", () => consul.register(web("web-4")));
    assert.equal(count(), start, "2 is not above 2");
    await change("a third instance (2 → 3)", () => consul.register(web("web-5")));
    assert.equal(count(), start + 1, "3 rose above 2");
    assert.equal(await received(out("on-count")), "web-1,web-4,web-5");
    await change("a fourth instance (3 → 4)", () => consul.register(web("web-6")));
    await change("back to three (4 → 3)", () => consul.deregister("web-6"));
    await change("back to two (3 → 2)", () => consul.deregister("web-5"));
    await change("back to one (2 → 1)", () => consul.deregister("web-4"));
    assert.equal(count(), start + 1, "no run while the count stays above 2, or falls without going below 1");
    await change("the last instance leaving (1 → 0)", () => consul.deregister("web-1"));
    assert.equal(count(), start + 2, "0 fell below 1: last out");
    assert.equal(await received(out("on-count")), "");
    await change("the first instance arriving (0 → 1)", () => consul.register(web("web-1")));
    assert.equal(count(), start + 2, "0 → 1 is not above 2");
  });
});

describe("event triggers in a CTS HCL config (cts_trigger, cts only)", () => {
  it('runs a task with cts_trigger = "deregister" on a deregistration and not on a registration', async () => {
    const consul = await startConsul();
    const tmp = await tempDir();
    const previousCli = process.env.TF_CLI_CONFIG_FILE;
    process.env.TF_CLI_CONFIG_FILE = tools().cliConfig;
    let rt: TestRuntime | undefined;
    try {
      await consul.register({ Name: "api", ID: "api-1", Port: 9000 });
      await consul.register({ Name: "api", ID: "api-2", Port: 9000 });
      const bin = join(tmp.dir, "bin");
      await mkdir(bin);
      await symlink(tools().tofu, join(bin, "terraform"));
      const out = join(tmp.dir, "svc.json");
      await writeFile(join(tmp.dir, "svc.tfvars"), `prefix = "p"\nout    = "${out}"\n`);
      const file = join(tmp.dir, "cts.hcl");
      await writeFile(
        file,
        `port        = 0
working_dir = "${join(tmp.dir, "work")}"
buffer_period {
  enabled = false
}
consul {
  address = "${consul.address}"
}
driver "terraform" {
  path = "${bin}"
}
task {
  name           = "scale-in"
  module         = "${RECORD}"
  variable_files = ["${join(tmp.dir, "svc.tfvars")}"]
  condition "services" {
    names       = ["api"]
    cts_trigger = "deregister"
  }
}
`,
      );
      rt = await startRuntime(file);
      const r = rt;
      const ids = async () =>
        Object.values<{ id: string }>(JSON.parse(await readFile(out, "utf8").catch(() => "{}")).services ?? {})
          .map((s) => s.id)
          .sort()
          .join(",");
      await waitFor(async () => (await ids()) === "api-1,api-2", 180_000, "the start-up run");
      await r.controller.whenIdle();
      const change = async (what: string, act: () => Promise<unknown>) => {
        const seen = r.controller.changeCount("scale-in");
        await act();
        await waitFor(() => r.controller.changeCount("scale-in") > seen, 30_000, what);
        await r.controller.whenIdle();
      };
      const runs = r.controller.runCount("scale-in");
      await change("api-3 registering", () => consul.register({ Name: "api", ID: "api-3", Port: 9000 }));
      assert.equal(r.controller.runCount("scale-in"), runs, "a registration does not run it");
      assert.equal(await ids(), "api-1,api-2");
      await change("api-1 deregistering", () => consul.deregister("api-1"));
      assert.equal(r.controller.runCount("scale-in"), runs + 1, "a deregistration runs it");
      assert.equal(await ids(), "api-2,api-3", "with every current instance, the one registered meanwhile too");
    } finally {
      await rt?.close();
      if (previousCli === undefined) delete process.env.TF_CLI_CONFIG_FILE;
      else process.env.TF_CLI_CONFIG_FILE = previousCli;
      await consul.stop();
      await tmp.cleanup();
    }
  });
});
