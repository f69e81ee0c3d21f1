import { traceSettings } from "./settings.ts";
import type { RunTracer, TraceAttributes } from "./tracing.ts";

/**
 * The daemon's run tracer when the standard `OTEL_*` environment asks for traces, else undefined.
 * OpenTelemetry's SDK is imported only then (otel.ts): tracing that is not configured loads nothing.
 * A tracer that cannot be made is a notice, never a failed start.
 */
export async function startTracing(o: { env?: NodeJS.ProcessEnv; attributes?: TraceAttributes; notice: (line: string) => void }): Promise<RunTracer | undefined> {
  const settings = traceSettings(o.env ?? process.env);
  if (!settings) return undefined;
  try {
    const { createOtelTracer } = await import("./otel.ts");
    return await createOtelTracer(settings, { notice: o.notice, ...(o.attributes ? { attributes: o.attributes } : {}) });
  } catch (err) {
    o.notice(`traces: OpenTelemetry could not be started (${err instanceof Error ? err.message : String(err)}); runs are not traced`);
    return undefined;
  }
}
