import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gunzipSync } from "node:zlib";
import { createTerraformDriver } from "../../src/terraform/driver.ts";
import { startConsul, type ConsulAgent } from "../support/consul.ts";
import { tools } from "../support/tools.ts";

describe("smoke: OpenTofu with the consul backend through the driver", () => {
  let consul: ConsulAgent;
  let root: string;

  before(async () => {
    consul = await startConsul();
    root = await mkdtemp(join(tmpdir(), "cts-smoke-"));
  });
  after(async () => {
    await consul?.stop();
    if (root) await rm(root, { recursive: true, force: true });
  });

  it("inits and applies a hand-written main.tf.json, storing state under CTS's key", async () => {
    const { tofu, cliConfig } = tools();
    const target = join(root, "hello.txt");
    const json = JSON.stringify({
      terraform: {
        backend: { consul: { path: "consul-terraform-sync/terraform", gzip: true } },
        required_providers: { local: { source: "hashicorp/local", version: ">= 2.0" } },
      },
      resource: { local_file: { hello: { filename: target, content: "hello from cts\n" } } },
    });
    const driver = createTerraformDriver({ binary: tofu, workingDir: join(root, "sync-tasks"), cliConfigFile: cliConfig, env: { CONSUL_HTTP_ADDR: consul.address } });

    const result = await driver.apply({ task: "smoke", json });

    assert.equal(result.initialized, true);
    assert.deepEqual(result.summary, { add: 1, change: 0, destroy: 0 });
    assert.equal(await readFile(target, "utf8"), "hello from cts\n");
    const [entry] = await consul.api("GET", "/v1/kv/consul-terraform-sync/terraform-env:smoke");
    const state = JSON.parse(gunzipSync(Buffer.from(entry.Value, "base64")).toString("utf8"));
    assert.equal(state.resources[0].type, "local_file");
  });
});
