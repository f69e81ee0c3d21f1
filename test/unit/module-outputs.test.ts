import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { ModuleTask, services } from "../../src/index.ts";
import { hclOutputs, localModuleOutputs } from "../../src/task/module-outputs.ts";
import { moduleTaskData, moduleTaskFrom } from "../../src/task/declaration.ts";
import { readCtsConfig } from "../../src/cts/config/load.ts";
import { synthesizeTask } from "../../src/synth/synthesize.ts";
import { taskProblems } from "../../src/task/validate.ts";
import { parseTask } from "../../src/api/task-request.ts";
import { taskFromHcl } from "../../src/cli/task-file.ts";
import { tempDir } from "../support/cts.ts";

const MODULE_TF = `
# output "commented" { value = 1 }
/* output "block_commented" {
  value = 2
} */
variable "services" { type = any }

locals {
  text = "output \\"in_a_string\\" { ${"$"}{jsonencode({ a = "}" })} }"
  doc  = <<-EOT
    output "in_a_heredoc" {
      value = "}"
    }
  EOT
}

output "pool_id" {
  description = "the pool's id { not a block }"
  value       = "pool-${"$"}{length(var.services)}"
}

output "token" {
  value     = "s3cr3t"
  sensitive = true
  precondition {
    condition     = length("}") == 1
    error_message = "a { brace"
  }
}

output plain_word {
  sensitive = false
  value = [for k, v in var.services : { id = k }]
}

output "session" {
  value     = "only during the run"
  ephemeral = true
}
`;

async function moduleDir(dir: string, files: Record<string, string>): Promise<string> {
  const m = join(dir, "module");
  await mkdir(m, { recursive: true });
  for (const [name, text] of Object.entries(files)) await writeFile(join(m, name), text);
  return m;
}

describe("a module's output blocks, read from its files", () => {
  it("finds every top-level output block and its sensitive flag, never one inside a comment, string, heredoc or block", () => {
    assert.deepEqual(hclOutputs(MODULE_TF), [
      { name: "pool_id" },
      { name: "token", sensitive: true },
      { name: "plain_word", sensitive: false },
      { name: "session", ephemeral: true },
    ]);
  });

  it("reads .tf and .tf.json files, override files last, and leaves out ephemeral outputs, other files and a folder that is not there", async () => {
    const tmp = await tempDir("cts-module-outputs-");
    try {
      const dir = await moduleDir(tmp.dir, {
        "main.tf": MODULE_TF,
        "extra.tf.json": JSON.stringify({ output: { json_out: { value: "${var.x}", sensitive: true }, pool_id: { value: 1 } } }),
        "token_override.tf": `output "pool_id" {\n  sensitive = true\n}\n`,
        "notes.txt": `output "not_read" {}`,
        "broken.tf.json": "{ not json",
      });
      assert.deepEqual(localModuleOutputs(dir), [
        { name: "json_out", sensitive: true },
        { name: "plain_word", sensitive: false },
        { name: "pool_id", sensitive: true },
        { name: "token", sensitive: true },
      ]);
      assert.deepEqual(localModuleOutputs(join(tmp.dir, "missing")), []);
    } finally {
      await tmp.cleanup();
    }
  });
});

describe("a ModuleTask's outputs in its root module", () => {
  const input = { services: [] };

  it("re-exports every output of a local module as a root output, sensitive kept, the module block unchanged", async () => {
    const tmp = await tempDir("cts-module-outputs-");
    try {
      await moduleDir(tmp.dir, { "main.tf": MODULE_TF });
      const task = new ModuleTask({ name: "pool", condition: services({ names: ["web"] }), module: "./module" });
      const json = task.terraformJson(input, { configDir: tmp.dir, taskDir: join(tmp.dir, "sync-tasks", "pool") });
      assert.deepEqual(json.output, {
        plain_word: { value: "${module.pool.plain_word}" },
        pool_id: { value: "${module.pool.pool_id}" },
        token: { value: "${module.pool.token}", sensitive: true },
      });
      // Outputs only: what Terraform applies is the same as without them.
      const without = new ModuleTask({ name: "pool", condition: services({ names: ["web"] }), module: "./module", outputs: [] });
      const bare = without.terraformJson(input, { configDir: tmp.dir, taskDir: join(tmp.dir, "sync-tasks", "pool") });
      assert.equal(bare.output, undefined, "outputs: [] shows none, and the root module is CTS's");
      const { output: _, ...rest } = json;
      assert.deepEqual(rest, bare);
      // And so in the synthesized JSON a run writes.
      const synth = JSON.parse(synthesizeTask(task, input, { configDir: tmp.dir }).json);
      assert.equal(synth.output.token.sensitive, true);
    } finally {
      await tmp.cleanup();
    }
  });

  it("shows only the listed outputs, and marks sensitiveOutputs sensitive", async () => {
    const tmp = await tempDir("cts-module-outputs-");
    try {
      await moduleDir(tmp.dir, { "main.tf": MODULE_TF });
      const task = new ModuleTask({ name: "pool", condition: services({ names: ["web"] }), module: "./module", outputs: ["pool_id"], sensitiveOutputs: ["plain_word"] });
      assert.deepEqual(task.terraformJson(input, { configDir: tmp.dir }).output, {
        plain_word: { value: "${module.pool.plain_word}", sensitive: true },
        pool_id: { value: "${module.pool.pool_id}" },
      });
    } finally {
      await tmp.cleanup();
    }
  });

  it("shows no outputs of a registry module unless they are listed, since its files are not there before init", () => {
    const bare = new ModuleTask({ name: "reg", condition: services({ names: ["web"] }), module: "findkim/print/cts", version: "0.1.0" });
    assert.equal(bare.terraformJson(input).output, undefined);
    const listed = new ModuleTask({ name: "reg", condition: services({ names: ["web"] }), module: "findkim/print/cts", outputs: ["pool_id"], sensitiveOutputs: ["token"] });
    assert.deepEqual(listed.terraformJson(input).output, {
      pool_id: { value: "${module.reg.pool_id}" },
      token: { value: "${module.reg.token}", sensitive: true },
    });
  });

  it("keeps the lists when the task is sent to another thread as data", () => {
    const task = new ModuleTask({ name: "reg", condition: services({ names: ["web"] }), module: "a/b/c", outputs: ["x"], sensitiveOutputs: ["y"] });
    const copy = moduleTaskFrom(structuredClone(moduleTaskData(task)));
    assert.deepEqual([copy.outputs, copy.sensitiveOutputs], [["x"], ["y"]]);
    const all = moduleTaskFrom(structuredClone(moduleTaskData(new ModuleTask({ name: "l", condition: services({ names: ["web"] }), module: "./m" }))));
    assert.deepEqual([all.outputs, all.sensitiveOutputs], [undefined, []]);
  });

  it("refuses an output name that is not one, naming the field", () => {
    const task = new ModuleTask({ name: "t", condition: services({ names: ["web"] }), module: "a/b/c", outputs: ["ok", "x}${bad"] });
    assert.deepEqual(
      taskProblems(task).map((p) => p.field),
      ["outputs[1]"],
    );
    assert.match(taskProblems(task)[0]!.message, /is not an output name\. Use the name of an `output` block of the module/);
  });
});

describe("cts_outputs and cts_sensitive_outputs in a CTS task block", () => {
  it("are read into the task's outputs and sensitiveOutputs", async () => {
    const tmp = await tempDir("cts-module-outputs-");
    try {
      const file = join(tmp.dir, "tasks.hcl");
      await writeFile(
        file,
        `task {
  name      = "reg"
  module    = "findkim/print/cts"
  cts_outputs           = ["pool_id"]
  cts_sensitive_outputs = ["token"]
  condition "services" {
    names = ["web"]
  }
}
`,
      );
      const [task] = (await readCtsConfig([file], tmp.dir)).config.tasks as ModuleTask[];
      assert.deepEqual([task!.outputs, task!.sensitiveOutputs], [["pool_id"], ["token"]]);
    } finally {
      await tmp.cleanup();
    }
  });

  it("refuses a bad name at its line, in the words of the CTS file", async () => {
    const tmp = await tempDir("cts-module-outputs-");
    try {
      const file = join(tmp.dir, "tasks.hcl");
      await writeFile(file, `task {\n  name   = "reg"\n  module = "a/b/c"\n  cts_outputs = ["ok", "no way"]\n  condition "services" {\n    names = ["web"]\n  }\n}\n`);
      await assert.rejects(readCtsConfig([file], tmp.dir), (e: Error) => {
        assert.match(e.message, /tasks\.hcl:4/);
        assert.match(e.message, /cts_outputs\[1\] "no way" is not an output name/);
        return true;
      });
      await writeFile(file, `task {\n  name   = "reg"\n  module = "a/b/c"\n  cts_sensitive_outputs = "token"\n  condition "services" {\n    names = ["web"]\n  }\n}\n`);
      await assert.rejects(readCtsConfig([file], tmp.dir), /tasks\.hcl:4.*cts_sensitive_outputs must be a list of the module's output names/);
    } finally {
      await tmp.cleanup();
    }
  });
});

describe("cts_outputs and cts_sensitive_outputs through the API and cts task create", () => {
  const base = { name: "t", module: "findkim/print/cts", condition: { services: { names: ["web"] } } };
  const message = (fn: () => unknown): string => {
    try {
      fn();
    } catch (err) {
      return (err as Error).message;
    }
    throw new Error("no error");
  };

  it("maps the keys of a create request onto the task, keys in any case", () => {
    const spec = parseTask({ ...base, cts_outputs: ["pool_id"], CTS_SENSITIVE_OUTPUTS: ["token"] });
    assert.deepEqual([spec.outputs, spec.sensitiveOutputs], [["pool_id"], ["token"]]);
    assert.deepEqual(new ModuleTask(spec).terraformJson({ services: [] }).output, {
      pool_id: { value: "${module.t.pool_id}" },
      token: { value: "${module.t.token}", sensitive: true },
    });
  });

  it("answers 400 naming the key and the fix for a bad value", () => {
    assert.match(message(() => parseTask({ ...base, cts_outputs: "pool_id" })), /task\.cts_outputs must be a list of the module's output names/);
    assert.match(message(() => parseTask({ ...base, cts_sensitive_outputs: ["a b"] })), /task\.cts_sensitive_outputs\[0\] "a b" is not an output name/);
  });

  it("reads them from a task file", async () => {
    const task = await taskFromHcl(`task "web" {\n  module = "m"\n  cts_outputs = ["pool_id"]\n  cts_sensitive_outputs = []\n  condition "services" {\n    names = ["web"]\n  }\n}`, "t.hcl");
    assert.deepEqual([task.cts_outputs, task.cts_sensitive_outputs], [["pool_id"], []]);
  });
});
