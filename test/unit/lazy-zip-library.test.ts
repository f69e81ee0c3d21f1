import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const REGISTER = new URL("../../src/register.ts", import.meta.url).href;
const TSX = import.meta.resolve("tsx");

/** Runs `source` (an ES module) in a fresh node as a task author's test runs; its last line is parsed as JSON. */
function inFreshNode(source: string): Promise<any> {
  const args = ["--conditions=cts-source", "--import", TSX, "--import", REGISTER, "--input-type=module", "-e", source];
  return new Promise((resolve, reject) =>
    execFile(process.execPath, args, { cwd: ROOT, maxBuffer: 16 * 1024 * 1024 }, (err, stdout, stderr) => {
      if (err) return reject(new Error(`node exited: ${err.message}\n${stderr}`));
      resolve(JSON.parse(stdout.trim().split("\n").pop()!));
    }),
  );
}

/** Source that defines `zipModules()`: how many modules of the zip library's dependencies are in the CommonJS cache (its own index may be the stand-in). */
const ZIP_MODULES = `
const { createRequire } = await import("node:module");
const cache = createRequire(process.cwd() + "/").cache;
const zipModules = () => Object.keys(cache).filter((k) => /node_modules\\/(archiver-utils|zip-stream|compress-commons)\\//.test(k)).length;
`;

describe("cdktf's zip library is not loaded with cdktf", () => {
  it("leaves it unloaded through a synthesis without an archive asset", async () => {
    const r = await inFreshNode(`${ZIP_MODULES}
      const { App, TerraformStack, TerraformOutput } = await import("cdktf");
      const app = new App({ outdir: ${JSON.stringify(tmpdir())}, skipValidation: true });
      const stack = new TerraformStack(app, "s");
      new TerraformOutput(stack, "o", { value: "x" });
      stack.toTerraform();
      console.log(JSON.stringify({ zipModules: zipModules() }));`);
    assert.equal(r.zipModules, 0);
  });

  it("zips an archive asset as before (cdktf zips in a node of its own)", async () => {
    const out = await mkdtemp(join(tmpdir(), "cts-zip-"));
    try {
      const r = await inFreshNode(`${ZIP_MODULES}
        const { existsSync, statSync } = await import("node:fs");
        const { App, TerraformStack, TerraformAsset, AssetType } = await import("cdktf");
        const before = zipModules();
        const app = new App({ outdir: ${JSON.stringify(out)}, skipValidation: true });
        const stack = new TerraformStack(app, "s");
        const asset = new TerraformAsset(stack, "code", { path: ${JSON.stringify(join(ROOT, "test/unit"))}, type: AssetType.ARCHIVE });
        app.synth();
        const zip = ${JSON.stringify(out)} + "/stacks/s/" + asset.path;
        console.log(JSON.stringify({ before, after: zipModules(), zip: existsSync(zip) ? statSync(zip).size : 0, name: asset.fileName }));`);
      assert.equal(r.before, 0);
      assert.equal(r.after, 0);
      assert.match(r.name, /\.zip$/);
      assert.ok(r.zip > 1000, `a zip was written (${r.zip} bytes)`);
    } finally {
      await rm(out, { recursive: true, force: true });
    }
  });

  it("gives the real library on the stand-in's first use", async () => {
    const r = await inFreshNode(`${ZIP_MODULES}
      await import("cdktf");
      const helpers = createRequire(import.meta.url).resolve("cdktf/lib/private/fs.js");
      const archiver = createRequire(helpers)("archiver");
      const before = zipModules();
      const archive = archiver("zip", { zlib: { level: 1 } });
      console.log(JSON.stringify({ before, after: zipModules(), pipes: typeof archive.pipe, create: typeof archiver.create }));`);
    assert.deepEqual(r, { before: 0, after: r.after, pipes: "function", create: "function" });
    assert.ok(r.after > 0);
  });
});
