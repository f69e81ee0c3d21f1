import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { startConsul, type ConsulAgent } from "../support/consul.ts";
import { startRuntime, tempDir, waitFor, writeConfig, type TestRuntime } from "../support/cts.ts";
import { writeEchoModule } from "../support/api.ts";

const CTS = fileURLToPath(new URL("../../bin/cts.js", import.meta.url));

function cts(args: string[], cwd: string): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => execFile("node", [CTS, ...args], { cwd }, (err, stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr })));
}

/**
 * A filter typo (`Service.Tag` for `Service.Tags`) reaches a real Consul, which refuses it: every
 * command reports it as the task's configuration error, where it is written, not as a Consul problem.
 */
describe("a task whose filter Consul refuses (real Consul)", () => {
  let consul: ConsulAgent;
  let tmp: { dir: string; cleanup(): Promise<void> };
  let file: string;
  let at: string;
  let rt: TestRuntime | undefined;
  const FILTER = 'Service.Tag contains "prod"';

  before(async () => {
    consul = await startConsul();
    tmp = await tempDir();
    await writeEchoModule(tmp.dir);
    await consul.register({ Name: "web", ID: "web-1", Address: "10.0.0.1", Port: 80, Tags: ["prod"] });
    file = await writeConfig(tmp.dir, {
      consulAddress: consul.address,
      tasks: [`new ModuleTask({ name: "allow-list", module: "./modules/echo", condition: services({ names: ["web"], filter: ${JSON.stringify(FILTER)} }), variables: { path: ${JSON.stringify(join(tmp.dir, "out.txt"))} } })`],
    });
    const lines = (await readFile(file, "utf8")).split("\n");
    const line = lines.findIndex((l) => l.includes("Service.Tag contains"));
    at = `cts.config.ts:${line + 1}:`;
  });
  after(async () => {
    await rt?.close();
    await consul?.stop();
    await tmp?.cleanup();
  });

  const reported = (text: string) => {
    assert.match(text, /Consul refuses the filter "Service\.Tag contains \\"prod\\"" of the task's services query/);
    assert.match(text, new RegExp(`\\(at (\\S*/)?${at.replace(/\./g, "\\.")}\\d+\\)`), `names where the filter is written (${at}…)`);
    assert.match(text, /Selector "Service\.Tag" is not valid\. Did you mean Service\.Tags\?/);
  };

  it("cts doctor fails the task's reads with the filter, where it is written and the fix, not the Consul connection", { timeout: 300_000 }, async () => {
    const r = await cts(["doctor"], tmp.dir);
    assert.equal(r.code, 1);
    const line = r.stdout.split("\n").find((l) => l.startsWith("✗ reads:allow-list")) ?? "";
    reported(line);
    assert.match(line, /Fix: fix the filter where the message says/);
    assert.doesNotMatch(r.stdout, /fix the Consul connection/);
    assert.match(r.stdout, /✓ consul: reachable/);
  });

  it("cts once fails the task with TASK_FILTER_INVALID naming the task", { timeout: 300_000 }, async () => {
    const r = await cts(["once", "--json"], tmp.dir);
    assert.equal(r.code, 1);
    const [task] = JSON.parse(r.stdout).tasks as Array<{ task: string; error: { code: string; message: string } }>;
    assert.equal(task!.error.code, "TASK_FILTER_INVALID");
    assert.match(task!.error.message, /^Task 'allow-list': /);
    reported(task!.error.message);
  });

  it("the daemon records the watch's failure as the task's event with the same error", { timeout: 120_000 }, async () => {
    rt = await startRuntime(file);
    const event = (await waitFor(() => rt!.controller.events.list("allow-list").find((e) => e.error), 60_000, "the task's failed event"))!;
    assert.equal(event.success, false);
    reported(event.error!.message);
  });
});
