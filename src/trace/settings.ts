/**
 * Whether the standard OpenTelemetry environment asks for traces, read as the OpenTelemetry SDKs
 * read it: `OTEL_SDK_DISABLED=true` or `OTEL_TRACES_EXPORTER=none` turn them off;
 * `OTEL_TRACES_EXPORTER=otlp` (or `console`) turns them on; unset, an OTLP endpoint
 * (`OTEL_EXPORTER_OTLP_ENDPOINT`, `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) turns them on.
 */
export interface TraceSettings {
  exporter: "otlp" | "console";
  /** The OTLP protocol: http/protobuf (the spec's default) or http/json. */
  protocol: "http/protobuf" | "http/json";
  /** Why the settings are not followed as written (an unsupported protocol or exporter), for a log line. */
  notice?: string;
}

/** The trace settings of an environment, or undefined when tracing is off (the default). */
export function traceSettings(env: NodeJS.ProcessEnv = process.env): TraceSettings | undefined {
  if ((env.OTEL_SDK_DISABLED ?? "").trim().toLowerCase() === "true") return undefined;
  const exporters = (env.OTEL_TRACES_EXPORTER ?? "")
    .split(",")
    .map((s) => s.trim().toLowerCase())
    .filter(Boolean);
  const endpoint = Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT);
  if (exporters.includes("none")) return undefined;
  if (exporters.length === 0 && !endpoint) return undefined;
  const notices: string[] = [];
  let exporter: TraceSettings["exporter"] = "otlp";
  if (exporters.length && !exporters.includes("otlp")) {
    if (exporters.includes("console")) exporter = "console";
    else notices.push(`OTEL_TRACES_EXPORTER=${env.OTEL_TRACES_EXPORTER} names no exporter cts has (otlp, console); using otlp`);
  }
  const asked = (env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL || env.OTEL_EXPORTER_OTLP_PROTOCOL || "http/protobuf").trim().toLowerCase();
  let protocol: TraceSettings["protocol"] = "http/protobuf";
  if (asked === "http/json") protocol = "http/json";
  else if (asked !== "http/protobuf")
    notices.push(`OTLP protocol '${asked}' is not one cts sends (http/protobuf, http/json); sending http/protobuf (point the endpoint at the collector's HTTP port, 4318)`);
  return { exporter, protocol, ...(notices.length ? { notice: notices.join("; ") } : {}) };
}
