import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { startConsul, type ConsulAgent } from "../support/consul.ts";
import { PUBLIC_API, tempDir, waitFor } from "../support/cts.ts";
import { tools } from "../support/tools.ts";
import { startOtelCollector, type OtelCollector, type ReceivedSpan } from "../support/otel-collector.ts";
import { loadConfig } from "../../src/config/load.ts";
import { createLogger } from "../../src/log/logger.ts";
import { startDaemon, type Daemon } from "../../src/daemon/compose.ts";
import { inProcessSynthesizer } from "../../src/synth/synthesizer.ts";

const FIXTURE = fileURLToPath(new URL("../fixtures/notify-tasks.ts", import.meta.url));

/** The OTEL_* environment the daemon (and the OpenTofu it starts) reads. */
const OTEL_VARS = ["OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_TRACES_EXPORTER", "OTEL_SERVICE_NAME", "OTEL_BSP_SCHEDULE_DELAY", "CTS_TEST_NOTIFY_SECRET"] as const;

describe("traces (real Consul, real OpenTofu, a real OpenTelemetry Collector)", () => {
  const token = Math.random().toString(36).slice(2, 10);
  const SECRET = `trace-secret-${token}`;
  // Catalog data no span may carry: an instance's id (the task writes the ids into a file) and its address.
  const INSTANCE = `web-${token}`;
  const ADDRESS = `10.77.${Math.floor(Math.random() * 200) + 1}.${Math.floor(Math.random() * 200) + 1}`;
  let consul: ConsulAgent;
  let tmp: { dir: string; cleanup(): Promise<void> };
  let collector: OtelCollector;
  let daemon: Daemon | undefined;
  const saved: Partial<Record<(typeof OTEL_VARS)[number], string>> = {};
  const lines: string[] = [];

  before(async () => {
    tmp = await tempDir();
    consul = await startConsul();
    collector = await startOtelCollector(tmp.dir);
    for (const k of OTEL_VARS) if (process.env[k] !== undefined) saved[k] = process.env[k];
    process.env.OTEL_EXPORTER_OTLP_ENDPOINT = collector.endpoint;
    process.env.OTEL_TRACES_EXPORTER = "otlp";
    process.env.OTEL_SERVICE_NAME = "cts-traces-test";
    process.env.OTEL_BSP_SCHEDULE_DELAY = "200";
    process.env.CTS_TEST_NOTIFY_SECRET = SECRET;
    await consul.register({ Name: "web", ID: "web-1", Address: "10.0.0.1", Port: 80 });
  });
  after(async () => {
    await daemon?.stop();
    await collector?.stop();
    await consul?.stop();
    await tmp?.cleanup();
    for (const k of OTEL_VARS) {
      if (saved[k] === undefined) delete process.env[k];
      else process.env[k] = saved[k];
    }
  });

  it("a change is one trace: the run, trigger, buffer wait, synthesis, guard check, plan and apply spans (init in the start-up run's) with the task's attributes and no catalog data or secret; OpenTofu's own spans join it", async () => {
    const t = tools();
    const out = join(tmp.dir, "out");
    await mkdir(out);
    const config = join(tmp.dir, "cts.config.ts");
    await writeFile(
      config,
      `import { defineConfig } from ${JSON.stringify(PUBLIC_API)};
import { SecretPathMembers } from ${JSON.stringify(FIXTURE)};
export default defineConfig({
  consul: { address: ${JSON.stringify(consul.address)} },
  driver: { terraform: { binary: ${JSON.stringify(t.tofu)}, cliConfigFile: ${JSON.stringify(t.cliConfig)}, workingDir: ${JSON.stringify(join(tmp.dir, "sync-tasks"))} } },
  bufferPeriod: false,
  api: { port: 0 },
  // A guard: the run plans, checks the plan, then applies exactly it (plan and apply spans).
  guards: { maxDestroy: 100 },
  tasks: [new SecretPathMembers("members", ${JSON.stringify(out)})],
});
`,
    );
    const loaded = await loadConfig(config);
    const log = createLogger({ level: "debug", write: (l) => lines.push(l) });
    daemon = await startDaemon(loaded, { log, synthesizer: inProcessSynthesizer((n) => loaded.config.tasks.find((x) => x.name === n)) });
    const events = () => daemon!.runtime.controller.events.list("members");
    await waitFor(() => events().length >= 1, 180_000, "the start-up run of members");
    assert.equal(events()[0]!.outcome, "applied", JSON.stringify(events()[0]));

    // The change: an instance registers; its run is traced from the change on.
    await consul.register({ Name: "web", ID: INSTANCE, Address: ADDRESS, Port: 8080, Meta: { secret: SECRET } });
    await waitFor(() => events().length >= 2, 180_000, "the run of the change");
    assert.equal(events()[0]!.outcome, "applied", JSON.stringify(events()[0]));

    const runOfChange = (spans: ReceivedSpan[]) => spans.find((s) => s.name === "cts.run" && s.attributes["cts.run.trigger"] === "change" && s.attributes["cts.run.outcome"] === "applied");
    const root = (await waitFor(() => runOfChange(collector.spans()), 60_000, "the run's span at the collector"))!;
    const inTrace = () => collector.spans().filter((s) => s.traceId === root.traceId);
    const names = ["cts.trigger", "cts.buffer_wait", "cts.synthesize", "cts.guard_check", "cts.terraform.plan", "cts.terraform.apply"];
    await waitFor(() => names.every((n) => inTrace().some((s) => s.name === n)), 60_000, `spans ${names.join(", ")} in the run's trace`);
    const spans = inTrace();
    const cts = spans.filter((s) => s.scope === "cts");

    // The root span and its children, with the task's attributes.
    assert.equal(root.parentId, "");
    assert.equal(root.service, "cts-traces-test", "OTEL_SERVICE_NAME names the service");
    assert.equal(root.attributes["cts.task.name"], "members");
    assert.equal(root.attributes["cts.driver"], "terraform");
    assert.equal(root.attributes["cts.run.mode"], "apply");
    assert.equal(root.attributes["cts.task.condition"], "services");
    assert.equal(root.attributes["cts.resources.add"], "1", "the plan replaces the members file: one to add");
    for (const n of names) assert.equal(cts.find((s) => s.name === n)!.parentId, root.spanId, `${n} is a child of the run`);
    assert.match(cts.find((s) => s.name === "cts.trigger")!.attributes["cts.change"] ?? "", /^services: /);

    // No catalog data, no secret in any attribute of cts's spans.
    for (const s of cts) {
      const text = JSON.stringify(s.attributes);
      for (const bad of [SECRET, INSTANCE, ADDRESS]) assert.ok(!text.includes(bad), `${s.name} carries '${bad}': ${text}`);
    }

    // OpenTofu 1.12 joins the trace: its spans (scope of its own) hang under cts's phase spans.
    const tofu = spans.filter((s) => s.scope !== "cts");
    assert.ok(tofu.length > 0, `OpenTofu's spans in the run's trace (got scopes: ${[...new Set(collector.spans().map((s) => s.scope))].join(", ")})`);
    const phaseIds = new Set(cts.filter((s) => s.name.startsWith("cts.terraform.")).map((s) => s.spanId));
    assert.ok(tofu.some((s) => phaseIds.has(s.parentId)), `an OpenTofu span is a child of a Terraform phase span: ${tofu.map((s) => `${s.name}<-${s.parentId}`).join(", ")}`);

    // The start-up run's trace has the init (a fresh working dir), OpenTofu's `tofu init` under it.
    const startUp = collector.spans().find((s) => s.name === "cts.run" && s.attributes["cts.run.trigger"] === "start");
    assert.ok(startUp, "the start-up run's span");
    const init = collector.spans().find((s) => s.traceId === startUp.traceId && s.name === "cts.terraform.init");
    assert.ok(init && init.parentId === startUp.spanId, "cts.terraform.init is a child of the start-up run");
    assert.ok(collector.spans().some((s) => s.traceId === startUp.traceId && s.parentId === init.spanId && s.scope !== "cts"), "OpenTofu's init spans hang under cts.terraform.init");
  });
});
