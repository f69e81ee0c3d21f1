import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { access, mkdtemp, rm } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const CTS = fileURLToPath(new URL("../../bin/cts.js", import.meta.url));

/** Runs the CLI with a stdout nobody reads: the reader is gone before the first line (`cts … | head -0`). */
function runWithClosedStdout(args: string[], env: Record<string, string> = {}): Promise<{ code: number | null; signal: string | null; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn("node", [CTS, ...args], { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, ...env } });
    child.stdout.destroy();
    let stderr = "";
    child.stderr.on("data", (d) => (stderr += d));
    child.on("close", (code, signal) => resolve({ code, signal, stderr }));
  });
}

describe("a CLI whose reader goes away (`cts … | head`)", () => {
  let dir: string;
  let server: Server;
  let address: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), "cts-pipe-"));
    // A stand-in for a daemon's API: `cts status` only reads these two answers.
    server = createServer((req, res) => {
      res.setHeader("content-type", "application/json");
      if (req.url?.startsWith("/v1/status/tasks"))
        return res.end(JSON.stringify(Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`task-${i}`, { task_name: `task-${i}`, status: "successful", enabled: true, events: [] }]))));
      res.end(JSON.stringify({ task_summary: { status: { successful: 50, errored: 0, critical: 0, unknown: 0 }, enabled: { true: 50, false: 0 } } }));
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    address = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  });
  after(async () => {
    await new Promise((r) => server.close(r));
    await rm(dir, { recursive: true, force: true });
  });

  it("`cts status` ends quietly with a Unix tool's broken-pipe status (141), without a stack trace", async () => {
    const r = await runWithClosedStdout(["status", "--http-addr", address]);
    assert.equal(r.stderr, "", "nothing on stderr");
    assert.equal(r.code, 141);
  });

  it("`cts init` writes every file of the project before it prints, so a closed pipe cannot leave it half made", async () => {
    const project = join(dir, "project");
    const r = await runWithClosedStdout(["init", project, "--service", "web"]);
    assert.equal(r.stderr, "");
    assert.equal(r.code, 141);
    for (const f of ["package.json", "tsconfig.json", "cts.config.ts", "tasks/web-members.ts", "test/web-members.test.ts", ".gitignore"]) await access(join(project, f));
  });

  it("a failed command keeps its own exit code", async () => {
    const r = await runWithClosedStdout(["status", "--http-addr", "http://127.0.0.1:1"]);
    assert.match(r.stderr, /Cannot reach cts at http:\/\/127\.0\.0\.1:1/);
    assert.doesNotMatch(r.stderr, /EPIPE|at .*\(node:/);
    assert.notEqual(r.code, 141);
    assert.notEqual(r.code, 0);
  });
});
