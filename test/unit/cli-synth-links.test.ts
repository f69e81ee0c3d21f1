import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdir, mkdtemp, readFile, rm, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const CTS = join(ROOT, "bin/cts.js");
const VALID = join(ROOT, "test/fixtures/configs/valid.ts");

function run(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) =>
    execFile("node", [CTS, ...args], { cwd: ROOT }, (err, stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr })),
  );
}

describe("`cts synth --out` writes as the driver does", () => {
  let dir: string;
  let snapshot: string;
  before(async () => {
    await mkdir(join(ROOT, ".cts"), { recursive: true });
    dir = await mkdtemp(join(ROOT, ".cts", "synth-links-"));
    snapshot = join(dir, "snapshot.json");
    await writeFile(snapshot, JSON.stringify({ services: [{ name: "web", id: "web-1", address: "10.0.0.1", port: 80 }] }));
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it("refuses a link planted at a task's main.tf.json, naming it, and writes nothing through it", async () => {
    const out = join(dir, "out");
    await mkdir(join(out, "members"), { recursive: true });
    const victim = join(dir, "victim");
    await writeFile(victim, "untouched");
    const link = join(out, "members", "main.tf.json");
    await symlink(victim, link);
    const r = await run(["synth", "members", "--config", VALID, "--input", snapshot, "--out", out]);
    assert.notEqual(r.code, 0, r.stdout);
    assert.ok(`${r.stdout}${r.stderr}`.includes(`${link} is a symbolic link`), `${r.stdout}\n${r.stderr}`);
    assert.equal(await readFile(victim, "utf8"), "untouched");
  });
});
