import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { startConsul } from "../support/consul.ts";
import { runTofu } from "../support/tofu.ts";
import { startRuntime, tempDir, writeConfig } from "../support/cts.ts";
import { writeCtsRootModule, type CtsTaskSpec } from "../support/cts-root-module.ts";

const MODULE = fileURLToPath(new URL("../fixtures/cts-modules/record", import.meta.url));

/**
 * A CTS user's state, made by CTS's own generated root module (reproduced from its templates), must
 * plan as "no changes" under ModuleTask for every condition type: same module name, workspace,
 * backend path and equal variable values.
 */
describe("a state CTS's generated root module made", () => {
  it("plans as no changes under ModuleTask for services, catalog-services, consul-kv and schedule tasks, and schedule tasks apply on every tick", async () => {
    const consul = await startConsul();
    const tmp = await tempDir();
    try {
      await consul.register({ Name: "api", ID: "api-1", Address: "10.1.0.1", Port: 9000, Tags: ["v2", "v1"], Meta: { team: "a" } });
      await consul.register({ Name: "api", ID: "api-2", Address: "10.1.0.2", Port: 9000 });
      await consul.register({ Name: "web", ID: "web-1", Port: 80, Tags: ["edge"] });
      await consul.api("PUT", "/v1/kv/cfg/app", "blue");
      // CTS writes KV values into HCL unescaped (a `${` or `"` breaks its run), so the state it made holds plain values.
      await consul.api("PUT", "/v1/kv/cfg/db/url", "pg://db:5432/app");
      const out = (t: string) => join(tmp.dir, `${t}.json`);
      const vars = (t: string) => ({ prefix: `p-${t}`, ports: [80, 443], out: out(t) });
      const tasks: CtsTaskSpec[] = [
        { name: "svc", module: MODULE, condition: { services: ["api"] }, variables: vars("svc"), providers: { local: {} } },
        { name: "cat", module: MODULE, condition: { catalogServices: "" }, variables: vars("cat"), providers: { local: {} } },
        { name: "kv", module: MODULE, condition: { kv: { path: "cfg/", recurse: true } }, moduleInputs: { services: ["web"] }, variables: vars("kv") },
        { name: "sched", module: MODULE, condition: { schedule: true }, moduleInputs: { kv: { path: "cfg/app", recurse: false } }, variables: vars("sched") },
      ];
      const env = { CONSUL_HTTP_ADDR: consul.address };
      for (const t of tasks) {
        const dir = join(tmp.dir, "cts", t.name);
        await writeCtsRootModule(dir, consul, t);
        for (const args of [["init", "-input=false"], ["workspace", "new", t.name], ["apply", "-auto-approve", "-input=false"]]) {
          const r = await runTofu(dir, args, env);
          assert.equal(r.exitCode, 0, `CTS root module of ${t.name}: tofu ${args.join(" ")}: ${r.stderr}`);
        }
      }
      const ctsView = JSON.parse(await readFile(out("kv"), "utf8"));
      assert.equal(ctsView.consul_kv["cfg/db/url"], "pg://db:5432/app");
      assert.match(Object.keys(ctsView.services).join(), /^web-1\.[^.]+\.dc1$/, "CTS keys services id.node.datacenter");

      const common = (t: string) => `variables: ${JSON.stringify(vars(t))}`;
      const file = await writeConfig(tmp.dir, {
        consulAddress: consul.address,
        tasks: [
          `new ModuleTask({ name: "svc", condition: services({ names: ["api"] }), module: ${JSON.stringify(MODULE)}, ${common("svc")}, providers: [{ name: "local" }] })`,
          `new ModuleTask({ name: "cat", condition: catalogServices({ regexp: "" }), module: ${JSON.stringify(MODULE)}, ${common("cat")}, providers: [{ name: "local" }] })`,
          `new ModuleTask({ name: "kv", condition: consulKv({ path: "cfg/", recurse: true }), inputs: { services: services({ names: ["web"] }) }, module: ${JSON.stringify(MODULE)}, ${common("kv")} })`,
          `new ModuleTask({ name: "sched", condition: schedule({ cron: "0 0 1 1 *" }), inputs: { kv: consulKv({ path: "cfg/app" }) }, module: ${JSON.stringify(MODULE)}, ${common("sched")} })`,
        ],
      });
      const rt = await startRuntime(file, { mode: "once" });
      try {
        const plans = await rt.controller.inspect(["svc", "cat", "kv", "sched"]);
        for (const plan of plans) {
          assert.equal(plan.ok, true, `${plan.task}: ${plan.error?.message}`);
          assert.equal(plan.result!.changesPresent, false, `${plan.task} would change CTS's state:\n${plan.result!.output}`);
        }
        const first = await rt.controller.once();
        assert.deepEqual(first.map((r) => [r.task, r.ok]), tasks.map((t) => [t.name, true]));
        const second = await rt.controller.once();
        const outcome = Object.fromEntries(second.map((r) => [r.task, r.outcome]));
        assert.equal(outcome.sched, "applied", "CTS applies a scheduled task on every tick");
        assert.equal(outcome.svc, "no-op");
      } finally {
        await rt.close();
      }
    } finally {
      await consul.stop();
      await tmp.cleanup();
    }
  });
});
