import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createTerraformDriver } from "../../src/terraform/driver.ts";
import { startConsul, type ConsulAgent } from "../support/consul.ts";
import { startRuntime, tempDir, writeConfig } from "../support/cts.ts";
import { tools } from "../support/tools.ts";

const TASKS = 40;

/**
 * Many fresh tasks at once share one empty plugin cache: one `init` fills it and the other fresh
 * tasks copy that init (or, with sharing off, each one's `init` re-links the cache while other
 * tasks' commands start the provider from it). No attempt may fail (the controller's retries would
 * hide a race, so a retry counts as a failure here).
 */
describe("40 fresh tasks, concurrency 8, one empty plugin cache (real OpenTofu and Terraform, real Consul)", () => {
  let consul: ConsulAgent;

  before(async () => {
    consul = await startConsul();
    await consul.register({ Name: "web", ID: "web-1", Address: "10.0.0.1", Port: 80 });
  });
  after(async () => {
    await consul?.stop();
  });

  async function onceThrough(prefix: string, binary?: string): Promise<void> {
    const tmp = await tempDir(`cts-cache-${prefix}-`);
    try {
      const tasks = Array.from({ length: TASKS }, (_, i) => `new MemberList(${JSON.stringify(`${prefix}-${i}`)}, ${JSON.stringify(join(tmp.dir, `out-${i}.txt`))})`);
      const file = await writeConfig(tmp.dir, { consulAddress: consul.address, tasks, extra: "concurrency: 8,", ...(binary ? { binary } : {}) });
      const rt = await startRuntime(file, { mode: "once", retries: 2, retryDelayMs: 200 });
      try {
        assert.deepEqual(await readdir(join(tmp.dir, "sync-tasks", ".plugin-cache")).catch(() => []), [], "the plugin cache starts empty");
        const outcomes = await rt.controller.once();
        const failed = outcomes.filter((o) => !o.ok).map((o) => `${o.task}: ${o.error?.message}`);
        assert.deepEqual(failed, []);
        const retried = rt.lines.filter((l) => /attempt \d+ failed|fork\/exec|failed to verify checksum/.test(l));
        assert.deepEqual(retried, [], "no attempt failed");
        assert.equal(await readFile(join(tmp.dir, `out-${TASKS - 1}.txt`), "utf8"), "web-1 10.0.0.1:80\n");
      } finally {
        await rt.close();
      }
    } finally {
      await tmp.cleanup();
    }
  }

  for (const rep of [1, 2, 3]) {
    it(`applies every task with no failed attempt, with OpenTofu (run ${rep} of 3)`, { timeout: 900_000 }, async () => {
      await onceThrough(`tofu${rep}`);
    });
  }

  it("with init sharing off, every task's own init re-links the cache under the others' applies, and none fails", { timeout: 900_000 }, async () => {
    const root = await mkdtemp(join(tmpdir(), "cts-cache-own-init-"));
    const t = tools();
    const driver = createTerraformDriver({ binary: t.tofu, cliConfigFile: t.cliConfig, workingDir: join(root, "sync-tasks"), pluginCacheDir: join(root, "cache"), env: { CONSUL_HTTP_ADDR: consul.address }, shareInit: false });
    try {
      const json = (i: number) =>
        JSON.stringify({
          terraform: { backend: { consul: { path: "cts-cache-own-init", gzip: true } }, required_providers: { local: { source: "hashicorp/local" } } },
          resource: { local_file: { out: { filename: join(root, `own-${i}.txt`), content: `${i}` } } },
        });
      const failed: string[] = [];
      let next = 0;
      const worker = async () => {
        for (let i = next++; i < 24; i = next++) await driver.apply({ task: `own-${i}`, json: json(i) }).catch((err: unknown) => failed.push(`own-${i}: ${String(err)}`));
      };
      await Promise.all(Array.from({ length: 8 }, worker));
      assert.deepEqual(failed, []);
    } finally {
      await driver.close();
      await rm(root, { recursive: true, force: true });
    }
  });

  it("applies every task with no failed attempt, with Terraform 1.5.7", { timeout: 900_000 }, async () => {
    await onceThrough("tf", tools().terraform);
  });
});
