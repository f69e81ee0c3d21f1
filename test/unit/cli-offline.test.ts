import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdir, mkdtemp, readFile, rm, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const CTS = join(ROOT, "bin/cts.js");
const VALID = join(ROOT, "test/fixtures/configs/valid.ts");

function run(cmd: string, args: string[], env: Record<string, string> = {}, cwd = ROOT): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) =>
    execFile(cmd, args, { cwd, env: { ...process.env, ...env } }, (err, stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr })),
  );
}

describe("offline review with a snapshot (no Consul, no Terraform)", () => {
  let dir: string;
  let snapshot: string;
  before(async () => {
    // Inside the package, so a scaffolded config can import "cdktf-sync" by name.
    await mkdir(join(ROOT, ".cts"), { recursive: true });
    dir = await mkdtemp(join(ROOT, ".cts", "offline-"));
    snapshot = join(dir, "snapshot.json");
    await writeFile(
      snapshot,
      JSON.stringify({ services: [{ name: "web", id: "web-1", address: "10.0.0.1", port: 80 }, { name: "web", id: "web-2", address: "10.0.0.2", port: 80, status: "critical" }] }),
    );
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it("`cts synth --input` synthesizes passing instances only and reports never-applied tasks", async () => {
    const r = await run("node", [CTS, "synth", "--config", VALID, "--input", snapshot, "--out", join(dir, "out"), "--json"]);
    assert.equal(r.code, 0, r.stderr);
    const summary = JSON.parse(r.stdout);
    assert.deepEqual(summary.tasks.map((t: { task: string; changed: string }) => [t.task, t.changed]), [["members", "never applied"], ["api-members", "never applied"]]);
    const json = JSON.parse(await readFile(join(dir, "out", "members", "main.tf.json"), "utf8"));
    assert.equal(json.resource.local_file.members.content, "web-1 10.0.0.1:80\n");
  });

  it("the cdktf app in cdktf.json produces the same stack JSON as `cts synth`", async () => {
    const out = join(dir, "cdktf.out");
    const app = await run(join(ROOT, "node_modules/.bin/tsx"), ["--conditions=cts-source", join(ROOT, "src/cli/cdktf-app.ts")], { CTS_CONFIG: VALID, CTS_INPUT: snapshot, CDKTF_OUTDIR: out }, dir);
    assert.equal(app.code, 0, app.stderr);
    const ours = await run("node", [CTS, "synth", "members", "--config", VALID, "--input", snapshot, "--stdout"]);
    assert.equal(await readFile(join(out, "stacks", "members", "cdk.tf.json"), "utf8"), ours.stdout);
    assert.ok(JSON.parse(await readFile(join(out, "manifest.json"), "utf8")).stacks.members);
  });

  it("`cts init` scaffolds a config and a task class that synthesize, and never overwrites on a second run", async () => {
    const project = join(dir, "project");
    const init = await run("node", [CTS, "init", project, "--service", "api", "--task", "api-members"]);
    assert.equal(init.code, 0, init.stderr);
    await writeFile(join(project, "tasks", "api-members.ts"), (await readFile(join(project, "tasks", "api-members.ts"), "utf8")) + "// edited by the user\n");
    const again = await run("node", [CTS, "init", project, "--service", "api", "--task", "api-members"]);
    assert.equal(again.code, 0, again.stderr);
    assert.match(again.stdout, /skipped .*tasks\/api-members\.ts: it exists/);
    assert.match(again.stdout, /skipped .*package\.json: it has everything cts needs/);
    assert.match(await readFile(join(project, "tasks", "api-members.ts"), "utf8"), /edited by the user/, "re-running init keeps the user's file");
    // The scaffold is its own package now: link this repository in as its installed cdktf-sync.
    await mkdir(join(project, "node_modules"), { recursive: true });
    await symlink(ROOT, join(project, "node_modules", "cdktf-sync"));
    await writeFile(snapshot + ".api", JSON.stringify({ services: [{ name: "api", id: "api-1", address: "10.9.9.9", port: 9000 }] }));
    const r = await run("node", [CTS, "synth", "--config", join(project, "cts.config.ts"), "--input", snapshot + ".api", "--stdout"]);
    assert.equal(r.code, 0, r.stderr);
    const json = JSON.parse(r.stdout);
    const content: string = Object.values<{ content: string }>(json.resource.local_file)[0]!.content;
    assert.equal(content, "10.9.9.9:9000 # api-1\n");
  });

  it("an unknown task name is a usage error listing the known tasks", async () => {
    const r = await run("node", [CTS, "synth", "nope", "--config", VALID, "--input", snapshot]);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /No task 'nope'.*Known tasks: members, api-members/);
  });
});
