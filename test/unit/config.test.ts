import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { loadConfig } from "../../src/config/load.ts";
import { tempDir } from "../support/cts.ts";

const fixture = (name: string) => fileURLToPath(new URL(`../fixtures/configs/${name}`, import.meta.url));

describe("loading cts.config.ts", () => {
  it("loads TypeScript with no build step and keeps the task instances", async () => {
    const loaded = await loadConfig(fixture("valid.ts"));
    assert.deepEqual(loaded.config.tasks.map((t) => t.name), ["members", "api-members"]);
    assert.equal(loaded.file, fixture("valid.ts"));
  });

  it("reads an edited config again when the same file is loaded twice in one process", async () => {
    const { writeFile } = await import("node:fs/promises");
    const { join } = await import("node:path");
    const { dir, cleanup } = await tempDir("cts-reload-");
    const api = fileURLToPath(new URL("../../src/index.ts", import.meta.url));
    const write = (name: string) =>
      writeFile(join(dir, "cts.config.ts"), `import { defineConfig, ModuleTask, services } from ${JSON.stringify(api)};\nexport default defineConfig({ tasks: [new ModuleTask({ name: ${JSON.stringify(name)}, module: "./m", condition: services({ names: ["web"] }) })] });\n`);
    try {
      await write("first");
      assert.equal((await loadConfig(join(dir, "cts.config.ts"))).config.tasks[0]!.name, "first");
      await write("second");
      assert.equal((await loadConfig(join(dir, "cts.config.ts"))).config.tasks[0]!.name, "second");
    } finally {
      await cleanup();
    }
  });

  it("gives the config this thread's copy of cts's own modules, not a second one in its tsx namespace", async () => {
    const { ModuleTask } = await import("../../src/task/module-task.ts");
    const loaded = await loadConfig(fixture("modules-only.ts"));
    assert.ok(loaded.config.tasks[0] instanceof ModuleTask, "the config's `cdktf-sync` is the module this thread loaded");
  });

  it("names the file, every bad field and the fix", async () => {
    await assert.rejects(loadConfig(fixture("bad.ts")), (e: any) => {
      assert.equal(e.code, "CONFIG_INVALID");
      const m: string = e.message;
      for (const want of [
        /bad\.ts: tasks\[0\]\.condition\.names is empty\. Name at least one service or use a regexp\./,
        /tasks\[1\]\.name 'bad\/name' is not a valid task name/,
        /tasks\[1\]\.condition\.regexp is not a valid regular expression/,
        /tasks\[2\]\.condition\.cron cron minutes field '99'/,
        /tasks\[3\]\.name 'sched' is also the name of tasks\[2\]/,
        /bufferPeriod\.min \(30s\) is greater than max \(5s\)/,
        /consul\.address 'not a url' is not host:port or a URL/,
      ])
        assert.match(m, want);
      return true;
    });
  });

  it("explains a file without a default export", async () => {
    await assert.rejects(loadConfig(fixture("no-default.ts")), /no-default\.ts: has no default export\. End it with `export default defineConfig/);
  });

  it("reports a config that throws while loading, with the file name", async () => {
    await assert.rejects(loadConfig(fixture("throws.ts")), (e: any) => e.code === "CONFIG_LOAD_FAILED" && /throws\.ts: could not load: config blew up/.test(e.message));
  });

  it("says how to create a config when none is found", async () => {
    await assert.rejects(loadConfig(undefined, "/"), /No cts\.config\.ts in \/\. Pass --config <file> or run `cts init`/);
  });
});

describe("driver.terraform time limits", () => {
  it("names a lock timeout or command timeout that is not a duration", async () => {
    await assert.rejects(loadConfig(fixture("bad-driver-timeouts.ts")), (e: any) => {
      assert.equal(e.code, "CONFIG_INVALID");
      assert.match(e.message, /driver\.terraform\.lockTimeout 'a minute' is not a duration/);
      assert.match(e.message, /driver\.terraform\.commandTimeouts\.workspace 'soon' is not a duration/);
      assert.doesNotMatch(e.message, /commandTimeouts\.init/);
      return true;
    });
  });
});
