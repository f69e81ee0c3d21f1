import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { errorKinds, errorSamples } from "../../bench/chaos/lib/observe.ts";
import { alive, processesUnder } from "../../bench/chaos/lib/procs.ts";
import { mergeReports, renderChaos, type ChaosReport, type ScenarioRecord } from "../../bench/chaos/lib/render.ts";
import { expectedContent, nfcHeld } from "../../bench/chaos/lib/hostile-payloads.ts";

const retried = (task: string, cause: string) =>
  `2026-11-23T12:46:10.000Z [WARN] (ctrl) task '${task}': attempt 1 failed, retrying in 1043 ms: Task '${task}': \`tofu apply\` failed (exit 1): ${cause}. Fix the task's configuration or run \`cts inspect ${task}\`. task=${task}`;

describe("chaos harness: reading the daemon's log", () => {
  it("groups failed attempts of different tasks by their cause", () => {
    const lines = [
      retried("t6", "could not read package directory: open .terraform/providers/registry.opentofu.org/hashicorp/local/2.9.0/linux_amd64: no such file or directory"),
      retried("t7", "could not read package directory: open .terraform/providers/registry.opentofu.org/hashicorp/local/2.9.0/linux_amd64: no such file or directory"),
      "2026-11-23T12:46:11.000Z [ERROR] (ctrl) task 'slow': Task 'slow': `tofu apply` failed (exit 1): error loading state: failed to lock state in Consul: Lock Info:",
      "2026-11-23T12:46:12.000Z [INFO] (ctrl) task 't8': applied add=1 change=0 destroy=0",
    ];
    assert.deepEqual(errorKinds(lines), ["2× apply: could not read package directory: open <provider dir>: no such file or directory.", "1× apply: error loading state: failed to lock state in Consul: Lock Info:"]);
    assert.equal(errorSamples(lines).length, 2);
  });
});

describe("chaos harness: finding processes a scenario left", () => {
  it("finds a process by its working dir and not one elsewhere", async () => {
    const dir = await mkdtemp(join(tmpdir(), "cts-chaos-unit-"));
    const inside = spawn("sleep", ["30"], { cwd: dir, stdio: "ignore" });
    const outside = spawn("sleep", ["30"], { cwd: tmpdir(), stdio: "ignore" });
    try {
      const found = processesUnder(dir);
      assert.deepEqual(found.map((p) => [p.pid, p.kind]), [[inside.pid, "local-exec"]]);
      assert.equal(alive(inside.pid!), true);
    } finally {
      inside.kill("SIGKILL");
      outside.kill("SIGKILL");
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe("chaos harness: a run of some scenarios merged into the report", () => {
  const machine = { cpus: 2, cpuModel: "test", memoryGiB: 1, os: "Linux", node: "v20", tofu: "OpenTofu", consul: "Consul", cdktf: "0.21.0", loadAtStart: 1 };
  const record = (id: string, verdict: string): ScenarioRecord => ({ id, figures: { scenario: id, changes: "1", runs: "1", errors: "0", orphans: "0", rss: "–", recovery: "–", verdict } });
  const report = (date: string, label: string, ids: string[], verdict: string): ChaosReport => ({
    date,
    command: `npm run chaos -- --label=${label}`,
    label,
    commit: date.slice(0, 4),
    totalSeconds: 10,
    machine,
    sizes: {} as ChaosReport["sizes"],
    sweptAfterScenarios: 0,
    scenarios: ids.map((id) => record(id, verdict)),
  });
  const order = ["flapping", "kill9", "hostile"];

  it("replaces the selected scenarios, keeps the others in order, and names each one's run", () => {
    const full = report("2026-01-01", "full", ["flapping", "kill9", "hostile"], "old");
    const merged = mergeReports(full, report("2026-02-02", "only hostile", ["hostile"], "new"), order);
    assert.deepEqual(
      merged.scenarios.map((s) => [s.id, s.figures.verdict, s.run?.label]),
      [
        ["flapping", "old", "full"],
        ["kill9", "old", "full"],
        ["hostile", "new", "only hostile"],
      ],
    );
    assert.deepEqual(merged.runs?.map((r) => [r.label, r.scenarios]), [["full", ["flapping", "kill9"]], ["only hostile", ["hostile"]]]);
    // Merging again drops a run none of whose scenarios is left.
    const again = mergeReports(merged, report("2026-03-03", "all again", ["flapping", "kill9"], "newer"), order);
    assert.deepEqual(again.runs?.map((r) => r.label), ["only hostile", "all again"]);
    const md = renderChaos(again);
    assert.match(md, /^# cts chaos runs\n/);
    assert.match(md, /From the run of 2026-02-02 \(only hostile\), commit 2026\./);
  });

  it("renders a report of one run as before (no list of runs)", () => {
    const md = renderChaos(report("2026-01-01", "full", ["flapping"], "ok"));
    assert.match(md, /^# cts chaos run \(full\)\n\nRun 2026-01-01 with/);
    assert.doesNotMatch(md, /From the run of/);
  });
});

describe("chaos harness: the bytes the hostile scenario expects", () => {
  const h = { id: "h-1", name: "hostile-1", v: 'a"<&>\u2028${x}', tags: ["é", "b\n", "\uFA5B"] };

  it("writes jsonencode's keys sorted by UTF-8 bytes, with Go's escapes of <>& and U+2028", () => {
    assert.equal(expectedContent("keys", h), '{"b\\n":"a\\"\\u003c\\u0026\\u003e\\u2028${x}","é":"a\\"\\u003c\\u0026\\u003e\\u2028${x}","\uFA5B":"a\\"\\u003c\\u0026\\u003e\\u2028${x}"}');
    assert.equal(expectedContent("json", h), JSON.stringify({ name: h.name, v: h.v, tags: h.tags }));
    assert.equal(expectedContent("join", h), `hostile-1|${h.v}|é|b\n|\uFA5B`);
  });

  it("knows what OpenTofu's NFC normalization makes of the strings (tags keep cts's order)", () => {
    assert.deepEqual(nfcHeld({ ...h, v: "e\u0301" }).tags, ["é", "b\n", "\u8005"]);
    assert.equal(nfcHeld({ ...h, v: "e\u0301" }).v, "\u00e9");
  });
});
