import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { startConsul, type ConsulAgent } from "../support/consul.ts";
import { runsOf, startRuntime, tempDir, waitFor, writeConfig } from "../support/cts.ts";
import { createPrometheusMetrics } from "../../src/metrics/prometheus.ts";
import { quote, UNPRINTABLE } from "../../src/values/quote.ts";

const CTS = fileURLToPath(new URL("../../bin/cts.js", import.meta.url));
const MODULE = fileURLToPath(new URL("../../modules/cts-echo", import.meta.url));

/** Names Consul 1.22 registers, lists in its catalog, and refuses (HTTP 400) to read the health of. */
const ODD = ["odd\nline", "odd\u0000nul", "odd\ttab"];
/** The two tasks: services matching a regexp as the condition, and as a module input of a KV condition. */
const TASKS = ["matching", "as-input"];

function cts(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile("node", [CTS, ...args], (err, stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }));
  });
}

/** Lines that warn about `name` being skipped by `task`. */
const warnings = (lines: string[], task: string, name: string) => lines.filter((l) => l.includes(`task '${task}': skipped service ${quote(name)}:`));

describe("services whose names Consul cannot serve (a newline, a NUL, a tab)", () => {
  let consul: ConsulAgent;
  let tmp: { dir: string; cleanup(): Promise<void> };
  /** A config of the two tasks writing what they receive into `<dir>/<task>.json`. */
  const configIn = async (name: string) => {
    const dir = join(tmp.dir, name);
    await mkdir(dir);
    const out = (task: string) => JSON.stringify(join(dir, `${task}.json`));
    const regexp = JSON.stringify("^(web|odd)");
    const file = await writeConfig(dir, {
      consulAddress: consul.address,
      tasks: [
        `new ModuleTask({ name: "matching", condition: services({ regexp: ${regexp} }), module: ${JSON.stringify(MODULE)}, variables: { output_path: ${out("matching")} } })`,
        `new ModuleTask({ name: "as-input", condition: consulKv({ path: "cfg/go" }), useAsModuleInput: false, inputs: { services: services({ regexp: ${regexp} }) }, module: ${JSON.stringify(MODULE)}, variables: { output_path: ${out("as-input")} } })`,
      ],
      extra: "bufferPeriod: false,",
    });
    const received = async (task: string) => Object.keys(JSON.parse(await readFile(join(dir, `${task}.json`), "utf8")) as Record<string, unknown>).sort();
    return { file, dir, received };
  };

  before(async () => {
    consul = await startConsul();
    tmp = await tempDir();
    await consul.register({ Name: "web", ID: "web-1", Address: "10.0.0.1", Port: 80 });
    for (const [i, name] of ODD.entries()) await consul.register({ Name: name, ID: `odd-${i}`, Address: `10.0.1.${i}`, Port: 80 });
  });
  after(async () => {
    await consul?.stop();
    await tmp?.cleanup();
  });

  it("Consul lists them in its catalog but answers their health with an empty HTTP 400", async () => {
    const catalog = (await consul.api("GET", "/v1/catalog/services")) as Record<string, unknown>;
    for (const name of ODD) {
      assert.ok(name in catalog, `${quote(name)} is registered`);
      const res = await fetch(`${consul.url}/v1/health/service/${encodeURIComponent(name)}`);
      assert.equal(res.status, 400, quote(name));
      assert.equal(await res.text(), "", "no reason given");
    }
  });

  it("the rule cts uses (a character Go's unicode.IsPrint refuses) is the rule Consul applies", async () => {
    // Named "probe…" so the tasks' regexp does not match them.
    const probes = ["probe ünïcödé", "probe😀", "probe a/b?c#d%e", "probe\u00a0nbsp", "probe\u2028ls", "probe\u200bzw", "probe\rcr", "probe\u007fdel", "probe\u{E0001}tag"];
    for (const [i, name] of probes.entries()) {
      await consul.register({ Name: name, ID: `probe-${i}` });
      const res = await fetch(`${consul.url}/v1/health/service/${encodeURIComponent(name)}`);
      const refused = res.status === 400 && (await res.text()) === "";
      assert.equal(refused, UNPRINTABLE.test(name), `${quote(name)}: Consul answered ${res.status}`);
    }
  });

  it("cts once applies both tasks with the other services and warns once per task and name", async () => {
    const { file, received } = await configIn("once");
    const r = await cts(["once", "--config", file, "--json"]);
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(
      (JSON.parse(r.stdout) as { tasks: { task: string; outcome: string }[] }).tasks.map((t) => [t.task, t.outcome]).sort(),
      TASKS.map((t) => [t, "applied"]).sort(),
    );
    for (const task of TASKS) assert.deepEqual(await received(task), ["web-1.cts-test.dc1"]);
    const lines = r.stderr.split("\n");
    for (const task of TASKS) for (const name of ODD) assert.equal(warnings(lines, task, name).length, 1, `${task} warns about ${quote(name)} once:\n${r.stderr}`);
    // The newline in "odd\nline" never starts a line of its own.
    assert.ok(!lines.some((l) => l.startsWith("line")), r.stderr);
  });

  it("cts inspect plans with the other services; cts synth leaves them out with a warning", async () => {
    const { file, dir } = await configIn("review");
    const rt = await startRuntime(file, { mode: "inspect" });
    try {
      const plans = await rt.controller.inspect();
      for (const p of plans) assert.equal(p.ok, true, `${p.task}: ${p.error?.message}`);
      for (const task of TASKS) for (const name of ODD) assert.equal(warnings(rt.lines, task, name).length, 1, `${task}/${quote(name)}:\n${rt.lines.join("\n")}`);
    } finally {
      await rt.close();
    }
    const s = await cts(["synth", "--config", file, "--out", join(dir, "synth"), "--json"]);
    assert.equal(s.code, 0, s.stderr);
    for (const task of TASKS) {
      const json = JSON.parse(await readFile(join(dir, "synth", task, "main.tf.json"), "utf8")) as { module: Record<string, { services: Record<string, unknown> }> };
      assert.deepEqual(Object.keys(json.module[task]!.services), ["web-1.cts-test.dc1"]);
      for (const name of ODD) assert.equal(warnings(s.stderr.split("\n"), task, name).length, 1, s.stderr);
    }
  });

  it("the daemon watches the other services, warns once, counts cts_consul_skipped_services_total, and never asks Consul for them again", async () => {
    const { file, received } = await configIn("watch");
    const metrics = createPrometheusMetrics({ defaultMetrics: false });
    const sample = async (name: string, labels: Record<string, string>) => {
      const metric = (await metrics.registry.getMetricsAsJSON()).find((m) => m.name === name);
      return (metric?.values ?? []).filter((v) => Object.entries(labels).every(([k, val]) => v.labels[k] === val)).reduce((n, v) => n + v.value, 0);
    };
    const rt = await startRuntime(file, { mode: "watch", metrics, watchTiming: { waitMs: 2_000 } });
    try {
      await waitFor(() => TASKS.every((t) => rt.controller.runCount(t) >= 1), 60_000, "the first run of both tasks");
      await rt.controller.whenIdle();
      for (const task of TASKS) {
        assert.deepEqual(
          runsOf(rt, task).map((e) => [e.outcome, e.error?.message]),
          [["applied", undefined]],
        );
        assert.deepEqual(await received(task), ["web-1.cts-test.dc1"]);
        assert.equal(await sample("cts_consul_skipped_services_total", { task }), ODD.length);
      }

      // A change of the catalog: the matching task runs again, the odd names are not asked for again.
      await consul.register({ Name: "web", ID: "web-2", Address: "10.0.0.2", Port: 80 });
      await waitFor(async () => (await received("matching").catch(() => [])).length === 2, 60_000, "web-2 to reach the matching task");
      await rt.controller.whenIdle();
      for (const task of TASKS) for (const name of ODD) assert.equal(warnings(rt.lines, task, name).length, 1, `${task}/${quote(name)} once:\n${rt.lines.join("\n")}`);
      for (const task of TASKS) assert.equal(await sample("cts_consul_skipped_services_total", { task }), ODD.length);
      // One refused read per odd name (both tasks share each name's view), never retried.
      assert.equal(await sample("cts_consul_view_errors_total", { kind: "health" }), ODD.length);
      assert.ok(await sample("cts_consul_blocking_queries", { kind: "health" }) <= 1, "only web's health query waits on Consul");
    } finally {
      await rt.close();
    }
  });
});
