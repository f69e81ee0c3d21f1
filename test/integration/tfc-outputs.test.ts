import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { TfcDriver } from "../../src/tfc/driver.ts";
import type { TaskWorkspace } from "../../src/driver/types.ts";
import { startTfcServer, type TfcTestServer } from "../support/tfc-server/index.ts";

const SECRET = "tfc-output-secret-4c1d";

/** A task with a file, a plain output and a sensitive one. */
function outputsTask(outDir: string, content: string): TaskWorkspace {
  const json = {
    terraform: { required_providers: { local: { source: "hashicorp/local" } } },
    resource: { local_file: { out: { filename: join(outDir, "outputs.txt"), content } } },
    output: { content: { value: "${local_file.out.content}" }, token: { value: SECRET, sensitive: true } },
  };
  return { task: "outs", json: JSON.stringify(json) };
}

/** CTS #1046 under the Terraform Cloud driver: the outputs come from the workspace's current state version. */
describe("task outputs through the Terraform Cloud driver (TFE-API test server, real OpenTofu runs)", () => {
  let server: TfcTestServer;
  let driver: TfcDriver;
  let out: string;
  let work: string;

  before(async () => {
    server = await startTfcServer();
    out = await mkdtemp(join(tmpdir(), "cts-tfc-outputs-out-"));
    work = await mkdtemp(join(tmpdir(), "cts-tfc-outputs-work-"));
    driver = new TfcDriver({ client: { hostname: server.url, token: server.token, retry: { baseDelayMs: 1, maxDelayMs: 5 } }, organization: server.organization, prefix: "cts-", tags: [], tagsAllowlist: [], tagsDenylist: [], workingDir: work, pollIntervalMs: 50 });
  });
  after(async () => {
    await driver?.close();
    await server?.stop();
    for (const d of [out, work]) if (d) await rm(d, { recursive: true, force: true });
  });

  it("answers an apply with the state version's outputs, the sensitive one redacted", async () => {
    const result = await driver.apply(outputsTask(out, "v1"));
    assert.deepEqual(result.outputs, { content: { value: "v1", sensitive: false }, token: { value: "(sensitive)", sensitive: true } });
    assert.ok(!JSON.stringify(result).includes(SECRET));
  });

  it("reads them again after the next apply, and answers none after a destroy", async () => {
    assert.equal((await driver.apply(outputsTask(out, "v2"))).outputs?.content?.value, "v2");
    assert.deepEqual((await driver.destroy(outputsTask(out, "v2"))).outputs, {});
  });
});
