import { context, ROOT_CONTEXT, SpanStatusCode, trace, type Attributes, type Span, type Tracer } from "@opentelemetry/api";
import { setGlobalErrorHandler, W3CTraceContextPropagator } from "@opentelemetry/core";
import { defaultResource, detectResources, envDetector, resourceFromAttributes } from "@opentelemetry/resources";
import { BatchSpanProcessor, ConsoleSpanExporter, TracerProvider, type SpanExporter, type SpanProcessor } from "@opentelemetry/sdk-trace";
import { ATTR_SERVICE_NAME, ATTR_SERVICE_VERSION } from "@opentelemetry/semantic-conventions";
import { knownSecrets } from "../secrets/redactor.ts";
import { VERSION } from "../version.ts";
import type { TraceSettings } from "./settings.ts";
import type { RunTracer, TraceAttributes, TracePhase, TraceSpan } from "./tracing.ts";

/** What the OpenTelemetry tracer needs besides the settings. */
export interface OtelTracerOptions {
  /** Attributes every run's span carries (the driver). */
  attributes?: TraceAttributes;
  /** Where the tracer's one notice goes (an exporter that cannot send, a setting not followed). */
  notice: (line: string) => void;
  /** The span processor (tests: a simple one over the SDK's in-memory exporter); default: a batch over the OTLP exporter of the settings. */
  processor?: SpanProcessor;
}

/** How long the daemon's stop waits for the last spans to be sent. */
const SHUTDOWN_MS = 3_000;

const PHASE_SPANS: Record<TracePhase, string> = {
  synthesize: "cts.synthesize",
  init: "cts.terraform.init",
  plan: "cts.terraform.plan",
  apply: "cts.terraform.apply",
  destroy: "cts.terraform.destroy",
  "guard-check": "cts.guard_check",
};

/** The OTLP exporter of the settings: the proto or the JSON one; each reads the `OTEL_EXPORTER_OTLP_*` environment itself. */
async function exporterOf(settings: TraceSettings): Promise<SpanExporter> {
  if (settings.exporter === "console") return new ConsoleSpanExporter();
  if (settings.protocol === "http/json") return new (await import("@opentelemetry/exporter-trace-otlp-http")).OTLPTraceExporter();
  return new (await import("@opentelemetry/exporter-trace-otlp-proto")).OTLPTraceExporter();
}

/**
 * The run tracer over OpenTelemetry's SDK: a tracer provider of its own (never the global one),
 * resource from `OTEL_SERVICE_NAME` / `OTEL_RESOURCE_ATTRIBUTES` (service.name "cts" by default),
 * spans batched to the OTLP exporter. Exporting is off the run's path: a collector that is down
 * costs a notice (once) and the spans it did not take; every attribute passes the redactor.
 */
export async function createOtelTracer(settings: TraceSettings, o: OtelTracerOptions): Promise<RunTracer> {
  let told = false;
  const once = (line: string): void => {
    if (told) return;
    told = true;
    o.notice(line);
  };
  if (settings.notice) o.notice(`traces: ${settings.notice}`);
  setGlobalErrorHandler((err) => once(`traces: spans could not be exported (${knownSecrets.redact(err instanceof Error ? err.message : String(err))}); they are dropped, runs go on (said once)`));
  const fromEnv = detectResources({ detectors: [envDetector] });
  const resource = defaultResource()
    .merge(resourceFromAttributes({ [ATTR_SERVICE_NAME]: "cts", [ATTR_SERVICE_VERSION]: VERSION }))
    .merge(fromEnv);
  const processor = o.processor ?? new BatchSpanProcessor({ exporter: await exporterOf(settings) });
  const provider = new TracerProvider({ resource, spanProcessors: [processor] });
  const tracer = provider.getTracer("cts", VERSION);
  const propagator = new W3CTraceContextPropagator();
  const changes = new Map<string, { at: number; what: string }>();
  const base = o.attributes ?? {};

  const wrap = (span: Span): TraceSpan => ({
    child: (phase, attributes) => wrap(tracer.startSpan(PHASE_SPANS[phase], { attributes: clean(attributes) }, trace.setSpan(ROOT_CONTEXT, span))),
    set: (attributes) => span.setAttributes(clean(attributes)),
    event: (name, attributes) => span.addEvent(name, clean(attributes)),
    env: () => {
      const carrier: Record<string, string> = {};
      propagator.inject(trace.setSpan(context.active(), span), carrier, { set: (c, k, v) => void (c[k] = v) });
      const env: Record<string, string> = {};
      if (carrier.traceparent) env.TRACEPARENT = carrier.traceparent;
      if (carrier.tracestate) env.TRACESTATE = carrier.tracestate;
      // OpenTofu exports its own spans only with OTEL_TRACES_EXPORTER=otlp; an endpoint alone turned cts's on.
      if (settings.exporter === "otlp" && !process.env.OTEL_TRACES_EXPORTER) env.OTEL_TRACES_EXPORTER = "otlp";
      return env;
    },
    end: (error) => {
      if (error) span.setStatus({ code: SpanStatusCode.ERROR, message: knownSecrets.redact(error) });
      span.end();
    },
  });

  return {
    changed(task, what) {
      // The first change of a run's trigger: later ones before the run collapse into it (as the buffer period does).
      if (!changes.has(task)) changes.set(task, { at: Date.now(), what });
    },
    startRun(task, attributes) {
      const change = changes.get(task);
      changes.delete(task);
      const now = Date.now();
      const attrs = { ...base, ...attributes, "cts.task.name": task };
      const root = startRoot(tracer, attrs, change?.at ?? now);
      if (change) {
        const parent = trace.setSpan(ROOT_CONTEXT, root);
        tracer.startSpan("cts.trigger", { startTime: change.at, attributes: clean({ "cts.task.name": task, "cts.change": change.what }) }, parent).end(change.at);
        tracer.startSpan("cts.buffer_wait", { startTime: change.at, attributes: clean({ "cts.task.name": task }) }, parent).end(now);
      }
      return wrap(root);
    },
    async shutdown() {
      // Sends what is buffered; a collector that does not answer holds the stop up for at most SHUTDOWN_MS.
      let timer: NodeJS.Timeout | undefined;
      const waited = new Promise<void>((resolve) => (timer = setTimeout(resolve, SHUTDOWN_MS)));
      await Promise.race([provider.shutdown().catch(() => undefined), waited]);
      clearTimeout(timer);
    },
  };
}

function startRoot(tracer: Tracer, attributes: TraceAttributes, startTime: number): Span {
  return tracer.startSpan("cts.run", { root: true, startTime, attributes: clean(attributes) }, ROOT_CONTEXT);
}

/** Attributes as they leave cts: every string through the redactor (a value from Terraform may quote a secret). */
function clean(attributes: TraceAttributes | undefined): Attributes {
  const out: Attributes = {};
  for (const [k, v] of Object.entries(attributes ?? {})) out[k] = typeof v === "string" ? knownSecrets.redact(v) : v;
  return out;
}
