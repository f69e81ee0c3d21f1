import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { binaryPath, PageWarmer } from "../../src/terraform/page-warmer.ts";
import { createTerraformDriver } from "../../src/terraform/driver.ts";
import { tempDir, waitFor } from "../support/cts.ts";
import { tools } from "../support/tools.ts";

/**
 * Issue #34: on a VM whose host takes back memory nobody touched, the cached pages of `tofu` go
 * cold in a quiet spell and the first run after it starts slower (and so do those of the daemon's
 * own `node`). The warmer reads the programs a run starts, and node, through at an interval while
 * quiet spells are kept fast, and never while one runs.
 */
describe("the page warmer for the programs a run starts (real OpenTofu)", () => {
  let keepAlive: NodeJS.Timeout;
  before(() => (keepAlive = setInterval(() => {}, 1_000)));
  after(() => clearInterval(keepAlive));

  it("reads each file through once per pass, every interval while kept, and stops when let go", async () => {
    const tofu = tools().tofu;
    const size = (await stat(tofu)).size;
    let passes = 0;
    const warmer = new PageWarmer(async () => {
      passes++;
      return [tofu, tofu, "/nonexistent/provider"];
    }, 50);
    assert.equal(await warmer.touch(), size, "the binary once (named twice), a missing file skipped");
    warmer.keep(true);
    await waitFor(() => passes >= 3, 10_000, "passes at the interval");
    warmer.keep(false);
    const stopped = passes;
    await new Promise((r) => setTimeout(r, 200));
    assert.ok(passes <= stopped + 1, "no pass after it was let go (one may have been under way)");
    warmer.close();
  });

  it("finds the Terraform binary on PATH, or takes the path given", async () => {
    const tofu = tools().tofu;
    assert.equal(await binaryPath(tofu)(), tofu);
    assert.equal(await binaryPath("cts-no-such-binary")(), undefined);
  });

  it("the local driver reads the binary and node while kept warm and idle, not during an operation", async () => {
    const tmp = await tempDir("cts-warm-pages-");
    const t = tools();
    const driver = createTerraformDriver({ binary: t.tofu, workingDir: join(tmp.dir, "work"), cliConfigFile: t.cliConfig, warmProviders: false });
    try {
      const parts = (driver as unknown as { parts: { warmer?: PageWarmer; operations?: { count: number } } }).parts;
      assert.ok(parts.warmer, "on by default");
      assert.equal(await parts.warmer.touch(), (await stat(t.tofu)).size + (await stat(process.execPath)).size, "idle: the binary and the daemon's own node");
      const out = join(tmp.dir, "out.txt");
      const json = JSON.stringify({ terraform: { required_providers: { local: { source: "hashicorp/local" } } }, resource: { local_file: { a: { filename: out, content: "x" } } } });
      const applied = driver.apply({ task: "warm", json });
      await waitFor(() => parts.operations!.count > 0, 10_000, "the operation under way");
      assert.equal(await parts.warmer.touch(), 0, "nothing read while it runs");
      await applied;
      assert.equal(parts.operations!.count, 0);
      const off = createTerraformDriver({ binary: t.tofu, workingDir: join(tmp.dir, "off"), warmPages: false, warmProviders: false });
      assert.equal((off as unknown as { parts: { warmer?: PageWarmer } }).parts.warmer, undefined, "warmPages: false");
      await off.close();
      await writeFile(join(tmp.dir, "done"), "");
    } finally {
      await driver.close();
      await tmp.cleanup();
    }
  });
});
