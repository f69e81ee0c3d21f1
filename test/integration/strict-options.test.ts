import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFile, spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { startConsul, type ConsulAgent } from "../support/consul.ts";
import { PUBLIC_API, tempDir } from "../support/cts.ts";
import { tools } from "../support/tools.ts";

const CTS = fileURLToPath(new URL("../../bin/cts.js", import.meta.url));
const TASKS = fileURLToPath(new URL("../fixtures/misspelt-options.ts", import.meta.url));
// Where `fitler` stands in the fixture (relative to the repository root, where the commands run).
const FIXTURE_LINES = readFileSync(TASKS, "utf8").split("\n");
const LINE = FIXTURE_LINES.findIndex((l) => l.includes("fitler:"));
const AT = `test/fixtures/misspelt-options.ts:${LINE + 1}:${FIXTURE_LINES[LINE]!.indexOf("fitler") + 1}`;
const MESSAGE = `services(): 'fitler' is not an option (at ${AT}). Did you mean 'filter'?`;

function cts(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile("node", [CTS, ...args], { timeout: 180_000 }, (err, stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }));
  });
}

describe("a misspelt option in a task file stops every command before anything runs", () => {
  let consul: ConsulAgent;
  let tmp: { dir: string; cleanup(): Promise<void> };
  let config: string;

  before(async () => {
    consul = await startConsul();
    tmp = await tempDir();
    // What the misspelt filter would have let through: a `dev` instance beside the `prod` ones.
    await consul.register({ Name: "web", ID: "web-prod", Address: "10.0.0.1", Port: 80, Tags: ["prod"] });
    await consul.register({ Name: "web", ID: "web-dev", Address: "10.0.0.2", Port: 80, Tags: ["dev"] });
    const t = tools();
    config = join(tmp.dir, "cts.config.ts");
    await writeFile(
      config,
      `import { defineConfig } from ${JSON.stringify(PUBLIC_API)};
import { ProdAllowList } from ${JSON.stringify(TASKS)};
export default defineConfig({
  consul: { address: ${JSON.stringify(consul.address)} },
  driver: { terraform: { binary: ${JSON.stringify(t.tofu)}, cliConfigFile: ${JSON.stringify(t.cliConfig)}, workingDir: ${JSON.stringify(join(tmp.dir, "sync-tasks"))} } },
  api: { port: 0 },
  tasks: [new ProdAllowList()],
});
`,
    );
  });
  after(async () => {
    await consul?.stop();
    await tmp?.cleanup();
  });

  for (const command of [["synth"], ["once"], ["doctor"], ["inspect"]]) {
    it(`cts ${command.join(" ")} exits 2 naming the key, its file:line:column and the key meant`, async () => {
      const r = await cts([...command, "--config", config]);
      assert.equal(r.code, 2, r.stderr);
      assert.ok(r.stderr.includes(MESSAGE), r.stderr);
      assert.match(r.stderr, /\n {4}at new ProdAllowList \(test\/fixtures\/misspelt-options\.ts:\d+:\d+\)/);
    });
  }

  it("cts watch stops at start with the same error, and nothing is applied", async () => {
    const child = spawn("node", [CTS, "watch", "--config", config], { stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    child.stdout.on("data", (d) => (out += d));
    child.stderr.on("data", (d) => (out += d));
    // Should it not stop, it is ended here rather than left running (the assertion then fails with its output).
    const stopper = setTimeout(() => child.kill("SIGKILL"), 180_000);
    const code = await new Promise<number | null>((resolve) => child.on("exit", resolve));
    clearTimeout(stopper);
    assert.equal(code, 2, out);
    assert.ok(out.includes(MESSAGE), out);
    assert.equal(existsSync(join(tmp.dir, "sync-tasks", "prod-allow-list")), false, "no working dir was made for the task");
  });
});
