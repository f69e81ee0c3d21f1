import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { startConsul, type ConsulAgent } from "../support/consul.ts";
import { startRuntime, tempDir, writeConfig } from "../support/cts.ts";
import { tools } from "../support/tools.ts";

const TASKS = 40;

/**
 * Many fresh tasks at once share one empty plugin cache: each one's `init` fills or re-links the
 * cache while other tasks' commands start the provider from it. No attempt may fail (the
 * controller's retries would hide a race, so a retry counts as a failure here).
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

  it("applies every task with no failed attempt, with Terraform 1.5.7", { timeout: 900_000 }, async () => {
    await onceThrough("tf", tools().terraform);
  });
});
