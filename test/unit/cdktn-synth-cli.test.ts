import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

const REPO = fileURLToPath(new URL("../../", import.meta.url));
const CDKTN_TASKS = fileURLToPath(new URL("../fixtures/cdktn-tasks.ts", import.meta.url));
const CDKTF_TASKS = fileURLToPath(new URL("../fixtures/tasks.ts", import.meta.url));
const PUBLIC_API = fileURLToPath(new URL("../../src/index.ts", import.meta.url));
const NASTY = '${file("/etc/hostname")}';

/** Runs `cts synth --stdout` on a config of `tasks` over a snapshot (no Consul, no Terraform). */
async function synth(tasks: string): Promise<{ code: number; stdout: string; stderr: string }> {
  const dir = await mkdtemp(join(tmpdir(), "cts-cdktn-synth-"));
  try {
    const config = join(dir, "cts.config.ts");
    await writeFile(
      config,
      `import { defineConfig } from ${JSON.stringify(PUBLIC_API)};
import { CdktnChain, MixedCdks } from ${JSON.stringify(CDKTN_TASKS)};
import { MemberList } from ${JSON.stringify(CDKTF_TASKS)};
void CdktnChain; void MixedCdks; void MemberList;
export default defineConfig({ consul: { address: "127.0.0.1:1" }, tasks: [${tasks}] });
`,
    );
    const snapshot = join(dir, "snap.json");
    await writeFile(snapshot, JSON.stringify({ services: [{ name: "web", id: "web-1", address: "10.0.0.1", port: 80, meta: { note: NASTY } }] }));
    const r = await promisify(execFile)(process.execPath, ["--conditions=cts-source", "--import", "tsx", join(REPO, "src/cli/main.ts"), "synth", "-c", config, "--snapshot", snapshot, "--stdout"], { cwd: REPO, encoding: "utf8" }).then(
      (ok) => ({ code: 0, ...ok }),
      (err: { code: number; stdout: string; stderr: string }) => err,
    );
    return r;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

describe("cts synth with a config of cdktn tasks (loaded in the config's own namespace)", () => {
  it("synthesizes a cdktn task next to a cdktf one, each on its library", async () => {
    const r = await synth(`new CdktnChain("chain"), new MemberList("members", "/tmp/cts-members.txt")`);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /"stackName": "chain",\s*"version": "0\.24\.\d+"/);
    assert.match(r.stdout, /"from": "\$\{terraform_data\.first\.output\.note\}"/, "a live reference");
    assert.match(r.stdout, /"value": "\$\{upper\(terraform_data\.second\.output\.from\)\}"/, "a live Fn call");
    assert.match(r.stdout, /"literal": \{\s*"value": "\$\$\{file\(\\"\/etc\/hostname\\"\)\}"/, "catalog text written literally");
    assert.match(r.stdout, /"stackName": "members",\s*"version": "0\.21\.0"/);
  });

  it("refuses a task that mixes cdktf and cdktn, naming both packages, and writes nothing for it", async () => {
    const r = await synth(`new MixedCdks("mixed")`);
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /Task 'mixed': mixes two CDK libraries: 'mixed\/local' is built with cdktf and 'mixed\/a' with cdktn/);
    assert.doesNotMatch(r.stdout, /terraform_data/);
  });
});
