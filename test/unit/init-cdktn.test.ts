import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { cp, mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { newPackageJson } from "../../src/cli/init-package.ts";
import { scaffold } from "../../src/cli/init.ts";
import { OWN_PACKAGE } from "../../src/version.ts";

const REPO = fileURLToPath(new URL("../../", import.meta.url));

/** The environment of a nested `node --test`: without the runner's context, it reports on its stdout. */
function testEnv(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  delete env.NODE_TEST_CONTEXT;
  return env;
}

describe("cts init --cdk cdktn", () => {
  it("depends on cdktn and the constructs it accepts instead of cdktf and @cdktf/provider-local", () => {
    const pkg = JSON.parse(newPackageJson("/home/me/sync", "cdktn"));
    assert.equal(pkg.dependencies.cdktn, OWN_PACKAGE.devDependencies.cdktn);
    assert.equal(pkg.dependencies.constructs, ">=10.6.0 <10.8.0");
    assert.equal(pkg.dependencies["cdktf-sync"], `^${OWN_PACKAGE.version}`);
    assert.ok(!("cdktf" in pkg.dependencies) && !("@cdktf/provider-local" in pkg.dependencies), JSON.stringify(pkg.dependencies));
    assert.equal(pkg.scripts.test, JSON.parse(newPackageJson("/home/me/sync")).scripts.test, "the same test script as a cdktf project");
  });

  it("scaffolds a cdktn task whose unit test passes, and adds the next service's task on cdktn too", async () => {
    const dir = await mkdtemp(join(tmpdir(), "cts-init-cdktn-"));
    // The generated test runs inside this repository, where `cdktf-sync` resolves to its source.
    const run = await mkdtemp(join(REPO, ".init-cdktn-"));
    try {
      await scaffold(dir, { service: "web", cdk: "cdktn" }, () => undefined);
      await scaffold(dir, { service: "api" }, () => undefined);
      for (const name of ["web-members", "api-members"]) {
        const task = await readFile(join(dir, "tasks", `${name}.ts`), "utf8");
        assert.match(task, /^import \{ DataResource, Fn, TerraformOutput \} from "cdktn";$/m, name);
        assert.doesNotMatch(task, /from "cdktf"|@cdktf\//, name);
      }
      await cp(join(dir, "tasks"), join(run, "tasks"), { recursive: true });
      await cp(join(dir, "test"), join(run, "test"), { recursive: true });
      const { stdout } = await promisify(execFile)(process.execPath, ["--conditions=cts-source", "--import", "tsx", "--test", "--test-reporter=tap", join(run, "test", "web-members.test.ts"), join(run, "test", "api-members.test.ts")], { cwd: REPO, encoding: "utf8", env: testEnv() });
      assert.match(stdout, /^# pass 2$/m, stdout);
      assert.match(stdout, /^# fail 0$/m, stdout);
    } finally {
      await rm(dir, { recursive: true, force: true });
      await rm(run, { recursive: true, force: true });
    }
  });

  it("refuses a library cts does not synthesize with", async () => {
    const { stderr } = await promisify(execFile)(process.execPath, ["--conditions=cts-source", "--import", "tsx", join(REPO, "src/cli/main.ts"), "init", "--cdk", "pulumi", join(tmpdir(), "cts-init-never")], { cwd: REPO, encoding: "utf8" }).catch((err: { stderr: string; code: number }) => {
      assert.notEqual(err.code, 0);
      return err;
    });
    assert.match(stderr, /--cdk 'pulumi' is not a CDK cts synthesizes with\. Use cdktf or cdktn\./);
  });
});
