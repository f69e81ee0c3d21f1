import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn, execFile } from "node:child_process";
import { writeFile, mkdir } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { startConsul, type ConsulAgent } from "../support/consul.ts";
import { PUBLIC_API, tempDir, waitFor } from "../support/cts.ts";
import { tools } from "../support/tools.ts";

const CTS = fileURLToPath(new URL("../../bin/cts.js", import.meta.url));
const TASKS = fileURLToPath(new URL("../fixtures/throwing-tasks.ts", import.meta.url));
// Where ThrowsInSynth's helper reads `.trim` of a missing meta key, and where synthesize() calls it
// (relative to the working directory the commands run in: the repository root).
const AT = "test/fixtures/throwing-tasks.ts:15:33";
const CALLER = "ThrowsInSynth.synthesize (test/fixtures/throwing-tasks.ts:10:37)";

function cts(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile("node", [CTS, ...args], (err, stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }));
  });
}

/** A config whose one task is `task` (TypeScript text using the throwing fixture tasks). */
async function config(dir: string, consulAddress: string, task: string): Promise<string> {
  const t = tools();
  await mkdir(dir, { recursive: true });
  const file = join(dir, "cts.config.ts");
  await writeFile(
    file,
    `import { defineConfig } from ${JSON.stringify(PUBLIC_API)};
import { ThrowsInSynth, ThrowsInConstructor } from ${JSON.stringify(TASKS)};
void ThrowsInSynth; void ThrowsInConstructor;
export default defineConfig({
  consul: { address: ${JSON.stringify(consulAddress)} },
  driver: { terraform: { binary: ${JSON.stringify(t.tofu)}, cliConfigFile: ${JSON.stringify(t.cliConfig)}, workingDir: ${JSON.stringify(join(dir, "sync-tasks"))} } },
  api: { port: 0 },
  tasks: [${task}],
});
`,
  );
  return file;
}

describe("an error thrown by the user's task code names the file, line and column", () => {
  let consul: ConsulAgent;
  let tmp: { dir: string; cleanup(): Promise<void> };
  let inSynth: string;
  let inConstructor: string;

  before(async () => {
    consul = await startConsul();
    tmp = await tempDir();
    // No meta.owner: the task's helper calls .trim() on undefined.
    await consul.register({ Name: "web", ID: "web-1", Address: "10.0.0.1", Port: 80 });
    inSynth = await config(join(tmp.dir, "synth"), consul.address, `new ThrowsInSynth("owners")`);
    inConstructor = await config(join(tmp.dir, "ctor"), consul.address, `new ThrowsInConstructor("owners")`);
  });
  after(async () => {
    await consul?.stop();
    await tmp?.cleanup();
  });

  it("cts synth prints the message with file:line:column and the user's frames, and --json carries them", async () => {
    const text = await cts(["synth", "--config", inSynth]);
    assert.notEqual(text.code, 0);
    assert.ok(text.stderr.includes(`synthesize() threw: Cannot read properties of undefined (reading 'trim') at ${AT}`), text.stderr);
    assert.ok(text.stderr.includes(`\n    at ownerOf (${AT})\n    at ${CALLER}`), text.stderr);
    assert.doesNotMatch(text.stderr, /node_modules|src\/synth|node:internal/);
    const json = await cts(["synth", "--config", inSynth, "--json"]);
    const row = (JSON.parse(json.stdout) as { tasks: Array<{ at?: string; stack?: string[] }> }).tasks[0]!;
    assert.equal(row.at, AT);
    assert.deepEqual(row.stack, [`ownerOf (${AT})`, CALLER]);
  });

  it("cts once reports the line in text and in --json", async () => {
    const text = await cts(["once", "--config", inSynth]);
    assert.equal(text.code, 1, text.stderr);
    assert.ok(text.stderr.includes(`at ${AT}`), text.stderr);
    assert.ok(text.stderr.includes(`\n    at ownerOf (${AT})\n    at ${CALLER}`), text.stderr);
    const json = await cts(["once", "--config", inSynth, "--json"]);
    const task = (JSON.parse(json.stdout) as { tasks: Array<{ error: { code: string; at?: string; stack?: string[] } }> }).tasks[0]!;
    assert.equal(task.error.code, "TASK_SYNTH_FAILED");
    assert.equal(task.error.at, AT);
    assert.deepEqual(task.error.stack, [`ownerOf (${AT})`, CALLER]);
  });

  it("a task constructor that throws while the config loads names its line", async () => {
    const r = await cts(["once", "--config", inConstructor]);
    assert.equal(r.code, 2, r.stderr);
    assert.ok(r.stderr.includes("no owner configured at test/fixtures/throwing-tasks.ts:22:11"), r.stderr);
    assert.match(r.stderr, /\n {4}at new ThrowsInConstructor \(test\/fixtures\/throwing-tasks\.ts:22:11\)/);
  });

  it("cts watch logs the line (text and JSON); the event in /v1/status/tasks and cts status --events carry it", async () => {
    for (const format of ["text", "json"]) {
      const child = spawn("node", [CTS, "watch", "--config", inSynth, "--log-format", format], { stdio: ["ignore", "pipe", "pipe"] });
      let log = "";
      child.stdout.on("data", (d) => (log += d));
      child.stderr.on("data", (d) => (log += d));
      const exited = new Promise((r) => child.on("exit", r));
      try {
        const url = (await waitFor(() => /api: listening on (http:\/\/\S+?)["\s]/.exec(log)?.[1], 60_000, "the API to listen"))!;
        const line = (await waitFor(() => log.split("\n").find((l) => l.includes("task 'owners'") && l.includes("synthesize() threw")), 60_000, "the failed run's log line"))!;
        if (format === "json") {
          const rec = JSON.parse(line) as { message: string; at: string; stack: string[] };
          assert.ok(rec.message.includes(`at ${AT}`), line);
          assert.equal(rec.at, AT);
          assert.deepEqual(rec.stack.slice(0, 2), [`ownerOf (${AT})`, CALLER]);
        } else {
          assert.ok(line.includes(`at ${AT}`), line);
          assert.ok(line.includes(`at=${AT}`), line);
        }
        const res = await fetch(`${url}/v1/status/tasks/owners?include=events`);
        const body = (await res.json()) as { owners: { status: string; events: Array<{ error: { message: string; at?: string; stack?: string[] } }> } };
        assert.equal(body.owners.status, "errored");
        const error = body.owners.events[0]!.error;
        assert.ok(error.message.includes(`at ${AT}`), error.message);
        assert.equal(error.at, AT);
        assert.deepEqual(error.stack?.slice(0, 2), [`ownerOf (${AT})`, CALLER]);
        if (format === "text") {
          const status = await cts(["status", "owners", "--events", "--http-addr", url]);
          assert.equal(status.code, 0, status.stderr);
          assert.ok(status.stdout.includes(`at ${AT}. Fix the task class`), status.stdout);
          assert.ok(status.stdout.includes(`\n      at ownerOf (${AT})\n      at ${CALLER}\n`), status.stdout);
        }
      } finally {
        child.kill("SIGTERM");
        await exited;
      }
    }
  });
});
