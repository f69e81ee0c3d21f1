import { AsyncLocalStorage } from "node:async_hooks";

/**
 * A run's trace as the runtime and the driver see it: one root span per run of a task, a child
 * span per phase. Only OpenTelemetry's SDK (otel.ts, loaded by the composition root when the
 * standard `OTEL_*` environment asks for traces) makes real spans; without a tracer installed every
 * call here is a plain call of its step, and nothing of OpenTelemetry is loaded.
 */

/** Span attribute values cts sets: names, counts, outcomes (never catalog data or Terraform values). */
export type TraceAttributes = Record<string, string | number | boolean>;

/** The phases of a run that get a span of their own. */
export type TracePhase = "synthesize" | "init" | "plan" | "apply" | "destroy" | "guard-check";

/** One span of a run: the run's root span or a phase's. */
export interface TraceSpan {
  /** Starts a child span (a phase). */
  child(phase: TracePhase, attributes?: TraceAttributes): TraceSpan;
  /** Adds attributes. */
  set(attributes: TraceAttributes): void;
  /** Adds an event (a plan held for approval). */
  event(name: string, attributes?: TraceAttributes): void;
  /** This span's W3C trace context, as Terraform reads it from its environment (TRACEPARENT, TRACESTATE). */
  env(): Record<string, string>;
  /** Ends the span; `error` (an error code) marks it failed. */
  end(error?: string): void;
}

/** Starts runs' traces (the composition root installs one; none: tracing is off). */
export interface RunTracer {
  /** A task's data changed (before its buffer period): the next run's trace starts at this moment. */
  changed(task: string, what: string): void;
  /** Starts the root span of a run of `task`. */
  startRun(task: string, attributes: TraceAttributes): TraceSpan;
  /** Sends what is buffered and stops (the daemon's stop). */
  shutdown(): Promise<void>;
}

let tracer: RunTracer | undefined;
const current = new AsyncLocalStorage<TraceSpan>();

/** Installs the daemon's tracer (src/daemon/compose.ts); undefined uninstalls it. */
export function installTracer(t: RunTracer | undefined): void {
  tracer = t;
}

/** Tells the tracer that a task's data changed; nothing without one. */
export function traceChange(task: string, what: string): void {
  try {
    tracer?.changed(task, what);
  } catch {
    // A trace never fails a run.
  }
}

/** What a run's result adds to its span when it ends. */
export interface TraceEnd {
  attributes: TraceAttributes;
  /** The error code of a run that did not succeed. */
  error?: string;
  /** Events to add (a plan held for approval). */
  events?: Array<{ name: string; attributes?: TraceAttributes }>;
}

/**
 * Runs `run` as one traced run of `task`: its root span is current within it (phase spans and the
 * Terraform env find it); `end` reads what the span gets from the result. Without a tracer: `run()`.
 */
export async function traceRun<T>(task: string, attributes: TraceAttributes, run: () => Promise<T>, end: (result: T) => TraceEnd): Promise<T> {
  if (!tracer) return run();
  let span: TraceSpan;
  try {
    span = tracer.startRun(task, attributes);
  } catch {
    return run();
  }
  let result: T;
  try {
    result = await current.run(span, run);
  } catch (err) {
    safely(() => span.end((err as { code?: string })?.code ?? "ERROR"));
    throw err;
  }
  safely(() => {
    const e = end(result);
    span.set(e.attributes);
    for (const ev of e.events ?? []) span.event(ev.name, ev.attributes);
    span.end(e.error);
  });
  return result;
}

/** Runs `step` in a span of the current run's phase; a plain call outside a traced run. */
export async function tracePhase<T>(phase: TracePhase, step: () => Promise<T>, attributes?: TraceAttributes): Promise<T> {
  const parent = current.getStore();
  if (!parent) return step();
  let span: TraceSpan;
  try {
    span = parent.child(phase, attributes);
  } catch {
    return step();
  }
  try {
    const result = await current.run(span, step);
    safely(() => span.end());
    return result;
  } catch (err) {
    safely(() => span.end((err as { code?: string })?.code ?? "ERROR"));
    throw err;
  }
}

/** Sets attributes on the span running now (nothing outside a traced run). */
export function traceAttributes(attributes: TraceAttributes): void {
  safely(() => current.getStore()?.set(attributes));
}

/** TRACEPARENT (and TRACESTATE) of the span running now, for a Terraform command's env; empty outside a traced run. */
export function traceEnv(): Record<string, string> {
  try {
    return current.getStore()?.env() ?? {};
  } catch {
    return {};
  }
}

function safely(f: () => void): void {
  try {
    f();
  } catch {
    // A trace never fails a run.
  }
}
