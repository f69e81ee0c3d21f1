import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { CtsError } from "../../src/errors/cts-error.ts";
import { refusedServiceName } from "../../src/consul/api-error.ts";
import { createLogger } from "../../src/log/logger.ts";
import { createPrometheusMetrics } from "../../src/metrics/prometheus.ts";
import { quote } from "../../src/values/quote.ts";
import { skippedServices } from "../../src/runtime/skipped-services.ts";
import { TaskInputReader } from "../../src/runtime/task-input.ts";
import type { TaskEntry } from "../../src/runtime/task-entry.ts";
import type { CatalogReader } from "../../src/consul/types.ts";
import { MemberList } from "../fixtures/tasks.ts";

const refusal = (service: string) => refusedServiceName(new CtsError("CONSUL_BAD_REQUEST", "usage", "HTTP 400", { detail: { status: 400 } }), service)!;

async function skippedTotal(m: ReturnType<typeof createPrometheusMetrics>, task: string): Promise<number> {
  const metric = (await m.registry.getMetricsAsJSON()).find((x) => x.name === "cts_consul_skipped_services_total");
  return (metric?.values ?? []).filter((v) => v.labels.task === task).reduce((n, v) => n + v.value, 0);
}

describe("skipped services (names Consul cannot serve)", () => {
  it("warns once per task and service name, quoted, and counts each in cts_consul_skipped_services_total", async () => {
    const lines: string[] = [];
    const metrics = createPrometheusMetrics({ defaultMetrics: false });
    const skipped = skippedServices(createLogger({ level: "info", write: (l) => lines.push(l) }), metrics);
    for (let poll = 0; poll < 3; poll++) {
      skipped.report("web-lb", "odd\nline", refusal("odd\nline"));
      skipped.report("web-lb", "odd\u0000nul", refusal("odd\u0000nul"));
    }
    skipped.report("other", "odd\nline", refusal("odd\nline"));

    assert.equal(lines.length, 3, "one line per task and name, not per poll");
    assert.ok(lines.every((l) => !/[\n\r\u0000\u2028]/.test(l)), "a name cannot break or forge a log line");
    assert.match(lines[0]!, /\[WARN\] task 'web-lb': skipped service "odd\\nline": Consul cannot serve its health \(HTTP 400: its HTTP API refuses URL paths with characters that are not printable\); the task runs with the other services\. Rename the service in Consul, or set disable_http_unprintable_char_filter = true on the Consul agents\./);
    assert.ok(lines[1]!.includes(`skipped service ${quote("odd\u0000nul")}:`));
    assert.ok(lines[1]!.includes('"odd\\u0000nul"'));
    assert.match(lines[2]!, /task 'other': skipped service "odd\\nline"/);
    assert.equal(await skippedTotal(metrics, "web-lb"), 2);
    assert.equal(await skippedTotal(metrics, "other"), 1);
  });

  it("a one-off read (once, inspect, a paused instance) tells the task's skips to the record", async () => {
    const reported: string[] = [];
    const reader: CatalogReader = {
      async read(_source, _signal, onSkipped) {
        onSkipped?.("odd\ttab", refusal("odd\ttab"));
        return [] as never;
      },
    };
    const e = { name: "members", task: new MemberList("members", "/tmp/unused.txt") } as unknown as TaskEntry;
    const input = await new TaskInputReader(reader, { report: (task, service) => reported.push(`${task}/${service}`) }).inputOf(e, new AbortController().signal);
    assert.deepEqual(input, { services: [] });
    assert.deepEqual(reported, ["members/odd\ttab"]);
  });
});
