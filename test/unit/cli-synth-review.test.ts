import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { access, mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const CTS = join(ROOT, "bin/cts.js");
const PUBLIC_API = join(ROOT, "src/index.ts");

function cts(args: string[], cwd: string): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => execFile("node", [CTS, ...args], { cwd }, (err, stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr })));
}
const missing = (p: string) => access(p).then(() => false, () => true);

describe("`cts synth` writes for review, never into a task's working dir", () => {
  let dir: string;
  let snapshot: string;
  before(async () => {
    await mkdir(join(ROOT, ".cts"), { recursive: true });
    dir = await mkdtemp(join(ROOT, ".cts", "synth-review-"));
    snapshot = join(dir, "snapshot.json");
    await writeFile(snapshot, JSON.stringify({ services: [{ name: "web", id: "web-1", address: "10.0.0.1", port: 80 }] }));
    // One task in the working root, one with a workingDir of its own.
    await writeFile(
      join(dir, "cts.config.ts"),
      `import { defineConfig, ModuleTask, services } from ${JSON.stringify(PUBLIC_API)};
const module = ${JSON.stringify(join(ROOT, "modules/allow-list"))};
export default defineConfig({
  tasks: [
    new ModuleTask({ name: "pooled", module, condition: services({ names: ["web"] }) }),
    new ModuleTask({ name: "own", module, condition: services({ names: ["web"] }), workingDir: "live/own" }),
  ],
});
`,
    );
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it("writes <config dir>/cts.out/<task>/main.tf.json and names that file, whatever the task's working dir", async () => {
    const r = await cts(["synth", "--input", snapshot, "--json"], dir);
    assert.equal(r.code, 0, r.stderr);
    const rows = JSON.parse(r.stdout).tasks as Array<{ task: string; file: string }>;
    assert.deepEqual(
      rows.map((t) => [t.task, t.file]),
      [
        ["pooled", join(dir, "cts.out", "pooled", "main.tf.json")],
        ["own", join(dir, "cts.out", "own", "main.tf.json")],
      ],
    );
    for (const { file } of rows) JSON.parse(await readFile(file, "utf8"));
    assert.ok(await missing(join(dir, "sync-tasks", "pooled", "main.tf.json")), "nothing in the working root");
    assert.ok(await missing(join(dir, "live", "own", "main.tf.json")), "nothing in the task's own working dir");
  });

  it("refuses an --out that would write into a task's working dir, which a running cts reads", async () => {
    await mkdir(join(dir, "live"), { recursive: true });
    const r = await cts(["synth", "own", "--input", snapshot, "--out", join(dir, "live")], dir);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /--out would write .*live\/own\/main\.tf\.json, the task's working dir, which a running cts reads/);
    assert.ok(await missing(join(dir, "live", "own", "main.tf.json")));
    const root = await cts(["synth", "pooled", "--input", snapshot, "--out", join(dir, "sync-tasks")], dir);
    assert.equal(root.code, 1);
    assert.ok(await missing(join(dir, "sync-tasks", "pooled", "main.tf.json")));
  });
});
