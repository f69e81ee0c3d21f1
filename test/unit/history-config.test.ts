import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { writeFile } from "node:fs/promises";
import { readCtsConfig } from "../../src/cts/config/load.ts";
import { loadConfig } from "../../src/config/load.ts";
import { CtsError } from "../../src/errors/cts-error.ts";
import { tempDir, PUBLIC_API } from "../support/cts.ts";

const TASK = `task {
  name   = "web"
  module = "org/mod/x"
  condition "schedule" {
    cron = "* * * * *"
  }
}
`;

describe("the run history's retention setting", () => {
  let dir: string;
  let cleanup: () => Promise<void>;
  let n = 0;
  before(async () => ({ dir, cleanup } = await tempDir()));
  after(() => cleanup());

  async function hcl(text: string) {
    const file = join(dir, `c${++n}.hcl`);
    await writeFile(file, text);
    return readCtsConfig([file], dir);
  }
  async function ts(history: string) {
    const file = join(dir, `c${++n}.config.ts`);
    await writeFile(file, `import { defineConfig, ModuleTask, services } from ${JSON.stringify(PUBLIC_API)};\nexport default defineConfig({ history: ${history}, tasks: [new ModuleTask({ name: "web", module: "./m", condition: services({ names: ["web"] }) })] });\n`);
    return loadConfig(file);
  }

  it("is read from CTS HCL's cts-specific cts_history_keep and cts_history_max_age", async () => {
    const r = await hcl(`cts_history_keep = 20\ncts_history_max_age = "168h"\n${TASK}`);
    assert.deepEqual(r.config.history, { keep: 20, maxAge: "168h" });
    assert.equal((await hcl(TASK)).config.history, undefined, "absent: the defaults (50 runs, 720h)");
  });

  it("refuses a bad HCL value with the file, the line and the fix", async () => {
    await assert.rejects(hcl(`${TASK}cts_history_keep = 0\n`), (err: unknown) => err instanceof CtsError && /c\d+\.hcl:8: cts_history_keep must be a whole number from 1 to 1000/.test(err.message));
    await assert.rejects(hcl(`cts_history_max_age = "a week"\n${TASK}`), (err: unknown) => err instanceof CtsError && /c\d+\.hcl:1: cts_history_max_age must be a positive duration such as "720h"/.test(err.message));
  });

  it("is checked in cts.config.ts, naming the field", async () => {
    assert.deepEqual((await ts(`{ keep: 10, maxAge: "24h" }`)).config.history, { keep: 10, maxAge: "24h" });
    await assert.rejects(ts(`{ keep: 0 }`), (err: unknown) => err instanceof CtsError && /history\.keep.*whole number from 1 to 1000/.test(err.message));
    await assert.rejects(ts(`{ maxAge: "soon" }`), (err: unknown) => err instanceof CtsError && /history\.maxAge.*'soon' is not a positive duration/.test(err.message));
  });
});
