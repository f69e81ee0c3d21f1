import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import { loadDaemonConfig } from "../../src/synth/daemon-config.ts";
import { inProcessSynthesizer } from "../../src/synth/synthesizer.ts";
import { loadConfig } from "../../src/config/load.ts";
import { DeclaredTask } from "../../src/task/declaration.ts";
import { ModuleTask } from "../../src/task/module-task.ts";
import type { TaskRef } from "../../src/synth/task-ref.ts";

const fixture = (name: string) => fileURLToPath(new URL(`../fixtures/configs/${name}`, import.meta.url));
const loadedHere = () => Object.keys(createRequire(import.meta.url).cache);
const instance = (id: string) => ({ id, name: "web", address: "10.0.0.1", port: 80, tags: [], meta: {}, node: "n1", nodeAddress: "10.0.0.1", datacenter: "dc1", namespace: "", partition: "", status: "passing", nodeMeta: {}, serviceTaggedAddresses: {}, kind: "" });

describe("a daemon's config", () => {
  it("is evaluated in the synthesis worker: the main thread gets plain declarations and never loads cdktf or provider bindings", async () => {
    const { loaded, synthesizer } = await loadDaemonConfig(fixture("valid.ts"));
    try {
      assert.deepEqual(loaded.config.tasks.map((t) => [t.name, t.constructor.name]), [["members", "MemberList"], ["api-members", "MemberList"]]);
      assert.ok(loaded.config.tasks.every((t) => t instanceof DeclaredTask), "task classes are stand-ins on the main thread");
      assert.deepEqual(loaded.config.bufferPeriod, { min: "1s", max: "4s" });
      assert.equal(synthesizer.running(), true, "the worker that loaded the config stays for the first synthesis");
      const ref: TaskRef = { kind: "config", configFile: loaded.file, name: "members" };
      const result = await synthesizer.synth(ref, { services: [instance("web-1")] } as never, {});
      assert.match(result.json, /10\.0\.0\.1:80/);
      const leaked = loadedHere().filter((f) => /[\\/](cdktf|@cdktf[\\/]provider-[^\\/]+|constructs)[\\/]/.test(f));
      assert.deepEqual(leaked, [], "cdktf, constructs and provider bindings stay in the worker");
    } finally {
      await synthesizer.close();
    }
  });

  it("with module tasks only, ends the worker at once and builds their root modules on the main thread", async () => {
    const { loaded, synthesizer } = await loadDaemonConfig(fixture("modules-only.ts"));
    try {
      assert.equal(synthesizer.running(), false);
      const [task] = loaded.config.tasks;
      assert.ok(task instanceof ModuleTask);
      const ref: TaskRef = { kind: "config", configFile: loaded.file, name: "echo", module: { name: "echo", module: "../../../modules/cts-echo", condition: task.condition, variables: { greeting: "hi" } } };
      const ours = await synthesizer.synth(ref, { services: [instance("web-1")] } as never, { configDir: loaded.dir });
      assert.equal(synthesizer.running(), false, "a module task never starts the worker");
      const full = await loadConfig(fixture("modules-only.ts"));
      const theirs = await inProcessSynthesizer((n) => full.config.tasks.find((t) => t.name === n)).synth(ref, { services: [instance("web-1")] } as never, { configDir: full.dir });
      assert.equal(ours.json, theirs.json, "the same root module as from the config's own ModuleTask");
    } finally {
      await synthesizer.close();
    }
  });

  it("that does not validate fails with the file and every problem, and leaves no worker running", async () => {
    await assert.rejects(loadDaemonConfig(fixture("bad.ts")), (err: Error & { code?: string }) => {
      assert.equal(err.code, "CONFIG_INVALID");
      assert.match(err.message, /bad\.ts/);
      assert.match(err.message, /consul\.address/);
      return true;
    });
  });

  it("refuses a setting that is not plain data, naming it", async () => {
    await assert.rejects(loadDaemonConfig(fixture("function-setting.ts")), (err: Error & { code?: string }) => {
      assert.equal(err.code, "CONFIG_INVALID");
      assert.match(err.message, /function-setting\.ts: 'consul' holds a value that is not plain data/);
      return true;
    });
  });
});
