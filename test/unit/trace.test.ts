import { describe, it, afterEach } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createServer } from "node:net";
import type { AddressInfo } from "node:net";
import { InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from "@opentelemetry/sdk-trace";
import { createOtelTracer } from "../../src/trace/otel.ts";
import { traceSettings } from "../../src/trace/settings.ts";
import { startTracing } from "../../src/trace/start.ts";
import { installTracer, traceChange, traceEnv, tracePhase, traceRun } from "../../src/trace/tracing.ts";
import { knownSecrets } from "../../src/secrets/redactor.ts";

const hex = (s: ReadableSpan) => s.spanContext();
const parentId = (s: ReadableSpan) => s.parentSpanContext?.spanId;

/** The spans the in-memory exporter holds (read before the tracer's shutdown: it empties the exporter). */
async function finished(exporter: InMemorySpanExporter): Promise<ReadableSpan[]> {
  await new Promise((r) => setImmediate(r));
  return exporter.getFinishedSpans();
}

async function memoryTracer(notices: string[] = []) {
  const exporter = new InMemorySpanExporter();
  const tracer = await createOtelTracer({ exporter: "otlp", protocol: "http/protobuf" }, { notice: (l) => notices.push(l), attributes: { "cts.driver": "terraform" }, processor: new SimpleSpanProcessor({ exporter }) });
  installTracer(tracer);
  return { exporter, tracer };
}

describe("traces: which OTEL_* environment turns them on", () => {
  it("is off with no OTEL_* variables, with OTEL_TRACES_EXPORTER=none and with OTEL_SDK_DISABLED=true", () => {
    assert.equal(traceSettings({}), undefined);
    assert.equal(traceSettings({ OTEL_TRACES_EXPORTER: "none", OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:4318" }), undefined);
    assert.equal(traceSettings({ OTEL_SDK_DISABLED: "true", OTEL_TRACES_EXPORTER: "otlp" }), undefined);
  });

  it("is on with OTEL_TRACES_EXPORTER=otlp, or with an OTLP endpoint alone", () => {
    assert.deepEqual(traceSettings({ OTEL_TRACES_EXPORTER: "otlp" }), { exporter: "otlp", protocol: "http/protobuf" });
    assert.deepEqual(traceSettings({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://127.0.0.1:4318/v1/traces" }), { exporter: "otlp", protocol: "http/protobuf" });
    assert.deepEqual(traceSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318", OTEL_EXPORTER_OTLP_PROTOCOL: "http/json" }), { exporter: "otlp", protocol: "http/json" });
  });

  it("sends http/protobuf and says so when grpc is asked", () => {
    const s = traceSettings({ OTEL_TRACES_EXPORTER: "otlp", OTEL_EXPORTER_OTLP_PROTOCOL: "grpc" });
    assert.equal(s?.protocol, "http/protobuf");
    assert.match(s?.notice ?? "", /'grpc' is not one cts sends.*4318/);
  });

  it("loads no OpenTelemetry SDK when not configured: startTracing gives no tracer, and the files the runtime imports import none of it", async () => {
    assert.equal(await startTracing({ env: {}, notice: () => assert.fail("no notice") }), undefined);
    for (const f of ["tracing.ts", "settings.ts", "start.ts"]) {
      const text = readFileSync(new URL(`../../src/trace/${f}`, import.meta.url), "utf8");
      assert.doesNotMatch(text, /^import[^;]*@opentelemetry/m, `src/trace/${f} imports OpenTelemetry statically`);
    }
  });
});

describe("traces: a run of a task is one trace (the SDK's in-memory exporter)", () => {
  afterEach(() => installTracer(undefined));

  it("without a tracer, a run and its phases are plain calls and Terraform gets no TRACEPARENT", async () => {
    const out = await traceRun("web", {}, () => tracePhase("plan", async () => traceEnv()), () => ({ attributes: {} }));
    assert.deepEqual(out, {});
  });

  it("makes a root span per run with trigger, buffer wait and phase spans as its children, with the task's attributes", async () => {
    const { exporter, tracer } = await memoryTracer();
    traceChange("web", "services: 1 instance registered");
    let env: Record<string, string> = {};
    await traceRun(
      "web",
      { "cts.task.name": "web", "cts.run.trigger": "change" },
      async () => {
        await tracePhase("synthesize", async () => undefined);
        await tracePhase("init", async () => undefined);
        await tracePhase("apply", async () => {
          env = traceEnv();
        });
        return { outcome: "applied" };
      },
      (r) => ({ attributes: { "cts.run.outcome": r.outcome, "cts.resources.add": 2 } }),
    );
    const spans = await finished(exporter);
    await tracer.shutdown();
    const byName = new Map(spans.map((s) => [s.name, s]));
    assert.deepEqual([...byName.keys()].sort(), ["cts.buffer_wait", "cts.run", "cts.synthesize", "cts.terraform.apply", "cts.terraform.init", "cts.trigger"]);
    const root = byName.get("cts.run")!;
    assert.equal(parentId(root), undefined);
    for (const s of spans) {
      assert.equal(hex(s).traceId, hex(root).traceId, `${s.name} is in the run's trace`);
      if (s !== root) assert.equal(parentId(s), hex(root).spanId, `${s.name} is a child of the run`);
    }
    assert.equal(root.attributes["cts.task.name"], "web");
    assert.equal(root.attributes["cts.driver"], "terraform");
    assert.equal(root.attributes["cts.run.outcome"], "applied");
    assert.equal(root.attributes["cts.resources.add"], 2);
    assert.equal(byName.get("cts.trigger")!.attributes["cts.change"], "services: 1 instance registered");
    // Terraform's env names the apply span: OpenTofu's spans become its children.
    const apply = byName.get("cts.terraform.apply")!;
    assert.equal(env.TRACEPARENT, `00-${hex(apply).traceId}-${hex(apply).spanId}-01`);
    assert.equal(env.OTEL_TRACES_EXPORTER, process.env.OTEL_TRACES_EXPORTER ? undefined : "otlp");
  });

  it("marks a failed run and a failed phase with the error's code, and never fails the run itself", async () => {
    const { exporter, tracer } = await memoryTracer();
    await assert.rejects(
      traceRun("db", {}, () => tracePhase("plan", async () => Promise.reject(Object.assign(new Error("boom"), { code: "TERRAFORM_FAILED" }))), () => ({ attributes: {} })),
      /boom/,
    );
    const spans = await finished(exporter);
    await tracer.shutdown();
    const plan = spans.find((s) => s.name === "cts.terraform.plan")!;
    const run = spans.find((s) => s.name === "cts.run")!;
    assert.equal(plan.status.message, "TERRAFORM_FAILED");
    assert.equal(run.status.code, 2);
  });

  it("puts no known secret in any attribute: strings pass the redactor", async () => {
    const secret = `s3cr3t-${Math.random().toString(36).slice(2)}`;
    knownSecrets.add(secret);
    const { exporter, tracer } = await memoryTracer();
    traceChange("api", `services: ${secret}`);
    await traceRun("api", { "cts.task.name": "api" }, async () => "ok", () => ({ attributes: { "cts.note": `value ${secret}` } }));
    const all = JSON.stringify((await finished(exporter)).map((s) => s.attributes));
    await tracer.shutdown();
    assert.ok(!all.includes(secret), all);
    assert.match(all, /\[redacted\]/);
  });

  it("says once that a collector cannot be reached, drops the spans and lets runs go on", async () => {
    // A port nothing listens on.
    const server = createServer();
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const { port } = server.address() as AddressInfo;
    await new Promise<void>((r) => server.close(() => r()));
    const saved = { ...process.env };
    process.env.OTEL_EXPORTER_OTLP_ENDPOINT = `http://127.0.0.1:${port}`;
    process.env.OTEL_BSP_SCHEDULE_DELAY = "50";
    const notices: string[] = [];
    let noticed!: () => void;
    const firstNotice = new Promise<void>((r) => (noticed = r));
    try {
      const tracer = await startTracing({
        env: { OTEL_TRACES_EXPORTER: "otlp" },
        notice: (l) => {
          notices.push(l);
          noticed();
        },
      });
      assert.ok(tracer);
      installTracer(tracer);
      for (let i = 0; i < 3; i++) assert.equal(await traceRun("web", {}, () => tracePhase("apply", async () => i), () => ({ attributes: {} })), i);
      // The batch is exported (and fails) in the SDK's own unref'd time: a listening server keeps the
      // process alive until that failure's notice, the event waited for, arrives.
      const alive = createServer();
      await new Promise<void>((r) => alive.listen(0, "127.0.0.1", r));
      try {
        await firstNotice;
      } finally {
        await new Promise<void>((r) => alive.close(() => r()));
      }
      await tracer.shutdown();
      assert.equal(notices.length, 1, notices.join("\n"));
      assert.match(notices[0]!, /spans could not be exported .*dropped, runs go on/);
    } finally {
      for (const k of ["OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_BSP_SCHEDULE_DELAY"]) if (saved[k] === undefined) delete process.env[k];
    }
  });
});

describe("traces: what a run's span says about its outcome", () => {
  it("an applied run: its outcome and the plan's resource counts, no error", async () => {
    const { runTraceEnd } = await import("../../src/runtime/run-trace.ts");
    const end = runTraceEnd({ task: "web", ok: true, outcome: "applied", result: { changesPresent: true, summary: { add: 2, change: 1, destroy: 0 }, output: "" } });
    assert.deepEqual(end.attributes, { "cts.run.outcome": "applied", "cts.run.ok": true, "cts.resources.add": 2, "cts.resources.change": 1, "cts.resources.destroy": 0 });
    assert.equal(end.error, undefined);
  });

  it("a held plan is an event with why and how many reasons (never the reasons' text), not an error", async () => {
    const { runTraceEnd } = await import("../../src/runtime/run-trace.ts");
    const { CtsError } = await import("../../src/errors/cts-error.ts");
    const hold = { task: "web", hash: "h", ref: "p", digest: "d", reasons: ["destroys 10.0.0.9's record"], why: "guards" as const, summary: { add: 0, change: 0, destroy: 3 }, resources: [], heldAt: "2026-01-01T00:00:00Z" };
    const end = runTraceEnd({ task: "web", ok: false, outcome: "held", hold, error: new CtsError("PLAN_HELD", "external", "held", { task: "web" }) });
    assert.equal(end.error, undefined);
    assert.deepEqual(end.events, [{ name: "cts.hold", attributes: { "cts.hold.why": "guards", "cts.hold.reasons": 1 } }]);
    assert.equal(end.attributes["cts.error.code"], "PLAN_HELD");
  });

  it("a failed run carries its error's code as the span's error", async () => {
    const { runTraceEnd } = await import("../../src/runtime/run-trace.ts");
    const { CtsError } = await import("../../src/errors/cts-error.ts");
    const end = runTraceEnd({ task: "web", ok: false, outcome: "failed", error: new CtsError("TERRAFORM_FAILED", "external", "apply failed at 10.0.0.9", { task: "web" }) });
    assert.equal(end.error, "TERRAFORM_FAILED");
    assert.ok(!JSON.stringify(end).includes("10.0.0.9"), "the message (which may quote catalog data) stays out");
  });
});
