import { spawn, type ChildProcess } from "node:child_process";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { freePort } from "./ports.ts";
import { otelcol } from "./tools.ts";
import { waitFor } from "./cts.ts";

/** One span as the collector's debug exporter printed it. */
export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentId: string;
  name: string;
  /** The service.name of its resource. */
  service: string;
  /** Its instrumentation scope (cts's spans: "cts"). */
  scope: string;
  /** Attribute values as printed (`Str(web)` → "web", `Int(2)` → "2"). */
  attributes: Record<string, string>;
  /** The span's whole text (events included). */
  text: string;
}

/** A real OpenTelemetry Collector on 127.0.0.1 (a free port): OTLP over HTTP in, the debug exporter out. */
export interface OtelCollector {
  /** The OTLP/HTTP endpoint (OTEL_EXPORTER_OTLP_ENDPOINT). */
  endpoint: string;
  /** Every span received so far. */
  spans(): ReceivedSpan[];
  /** Everything it printed. */
  output(): string;
  stop(): Promise<void>;
}

/** Starts the collector scripts/tools.sh built; stop it in the test's `after`. */
export async function startOtelCollector(dir: string): Promise<OtelCollector> {
  const port = await freePort();
  const config = join(dir, "otelcol.yaml");
  await writeFile(
    config,
    `receivers:
  otlp:
    protocols:
      http:
        endpoint: 127.0.0.1:${port}
exporters:
  debug:
    verbosity: detailed
service:
  telemetry:
    metrics:
      level: none
  pipelines:
    traces:
      receivers: [otlp]
      exporters: [debug]
`,
  );
  let out = "";
  const child: ChildProcess = spawn(otelcol(), ["--config", config], { stdio: ["ignore", "pipe", "pipe"] });
  child.stdout!.on("data", (d: Buffer) => (out += d.toString("utf8")));
  child.stderr!.on("data", (d: Buffer) => (out += d.toString("utf8")));
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  await waitFor(() => out.includes("Everything is ready") || child.exitCode !== null, 60_000, "the OpenTelemetry Collector to start");
  if (child.exitCode !== null) throw new Error(`the OpenTelemetry Collector exited at start:\n${out}`);
  return {
    endpoint: `http://127.0.0.1:${port}`,
    spans: () => parseDebugOutput(out),
    output: () => out,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill("SIGTERM");
        const killed = setTimeout(() => child.kill("SIGKILL"), 10_000);
        await exited;
        clearTimeout(killed);
      }
    },
  };
}

/** Reads the spans out of the debug exporter's detailed text (ResourceSpans → ScopeSpans → Span). */
export function parseDebugOutput(text: string): ReceivedSpan[] {
  const spans: ReceivedSpan[] = [];
  for (const resource of text.split(/ResourceSpans #\d+\n/).slice(1)) {
    const service = /-> service\.name: Str\(([^)]*)\)/.exec(resource.split(/ScopeSpans #\d+\n/)[0] ?? "")?.[1] ?? "";
    for (const scopeText of resource.split(/ScopeSpans #\d+\n/).slice(1)) {
      const scope = /InstrumentationScope (\S+)/.exec(scopeText)?.[1] ?? "";
      for (const spanText of scopeText.split(/\nSpan #\d+\n/).slice(1)) {
        const field = (name: string) => new RegExp(`${name}\\s*: ?(.*)`).exec(spanText)?.[1]?.trim() ?? "";
        const attributes: Record<string, string> = {};
        const attrs = spanText.split("\nAttributes:\n")[1]?.split(/\n(?!\s+->)/)[0] ?? "";
        for (const m of attrs.matchAll(/->\s+([^:]+):\s+\w+\((.*)\)$/gm)) attributes[m[1]!] = m[2]!;
        spans.push({ traceId: field("Trace ID"), spanId: field("    ID"), parentId: field("Parent ID"), name: field("Name"), service, scope, attributes, text: spanText });
      }
    }
  }
  return spans;
}
