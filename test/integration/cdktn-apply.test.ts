import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { gunzipSync } from "node:zlib";
import { startConsul, type ConsulAgent } from "../support/consul.ts";
import { runsOf, startRuntime, tempDir, waitFor, writeConfig } from "../support/cts.ts";

const CDKTN_TASKS = fileURLToPath(new URL("../fixtures/cdktn-tasks.ts", import.meta.url));
const NASTY = '${file("/etc/hostname")}';

describe("a cdktn task applied by the daemon (real Consul, real OpenTofu)", () => {
  let consul: ConsulAgent;
  let tmp: { dir: string; cleanup(): Promise<void> };

  before(async () => {
    consul = await startConsul();
    tmp = await tempDir("cts-cdktn-");
  });
  after(async () => {
    await consul?.stop();
    await tmp?.cleanup();
  });

  it("applies references, an iterator and Fn outputs as resolved values, and catalog text with `${` literally", { timeout: 300_000 }, async () => {
    await consul.register({ Name: "web", ID: "web-1", Address: "10.0.0.1", Port: 80, Meta: { note: NASTY } });
    // The config also loads the cdktf fixture tasks: both libraries are loaded in the worker.
    const config = await writeConfig(tmp.dir, { consulAddress: consul.address, tasks: [`new CdktnChain("chain")`] });
    await writeFile(config, `import { CdktnChain } from ${JSON.stringify(CDKTN_TASKS)};\n${await readFile(config, "utf8")}`);

    // Watch mode: the task is synthesized in the daemon's worker, where the config loaded.
    const rt = await startRuntime(config, { mode: "watch" });
    try {
      await waitFor(() => rt.controller.runCount("chain") >= 1, 120_000, "the first run of task chain");
      await rt.controller.whenIdle();
      assert.deepEqual(
        runsOf(rt, "chain").map((e) => [e.outcome, e.error?.message]),
        [["applied", undefined]],
      );
    } finally {
      await rt.close();
    }

    const main = JSON.parse(await readFile(join(tmp.dir, "sync-tasks", "chain", "main.tf.json"), "utf8"));
    assert.equal(main["//"].metadata.version, JSON.parse(await readFile(fileURLToPath(new URL("../../node_modules/cdktn/package.json", import.meta.url)), "utf8")).version, "synthesized with cdktn");

    const [entry] = await consul.api("GET", "/v1/kv/consul-terraform-sync/terraform-env:chain");
    const state = JSON.parse(gunzipSync(Buffer.from(entry.Value, "base64")).toString("utf8"));
    const outputs = Object.fromEntries(Object.entries<{ value: unknown }>(state.outputs).map(([k, v]) => [k, v.value]));
    assert.deepEqual(outputs, { upper: NASTY.toUpperCase(), joined: "10.0.0.1|x", literal: NASTY });
    const attributes = (name: string) =>
      state.resources
        .filter((r: { type: string; name: string }) => r.type === "terraform_data" && r.name === name)
        // terraform_data's output is a dynamic value: the state keeps its type beside it.
        .flatMap((r: { instances: Array<{ index_key?: string; attributes: { output: { value: unknown } } }> }) => r.instances.map((i) => [i.index_key ?? null, i.attributes.output.value]));
    assert.deepEqual(attributes("first"), [[null, { note: NASTY, address: "10.0.0.1" }]]);
    assert.deepEqual(attributes("second"), [[null, { from: NASTY }]], "the reference resolved to the first resource's literal text");
    assert.deepEqual(attributes("each").sort(), [["a", { v: "a", note: NASTY }], ["b", { v: "b", note: NASTY }]]);
  });
});
