import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Task, services, type ServicesCondition, type TaskScope } from "../../src/index.ts";
import { loadConfig, validateConfig } from "../../src/config/load.ts";
import { CtsError } from "../../src/errors/cts-error.ts";
import type { CtsConfig } from "../../src/config/types.ts";
import { PUBLIC_API } from "../support/cts.ts";

class WebPool extends Task<ServicesCondition> {
  constructor(name = "web-pool") {
    super({ name, condition: services({ names: ["web"] }) });
  }
  synthesize(_scope: TaskScope): void {}
}

function problemsOf(config: unknown): string {
  try {
    validateConfig(config as CtsConfig, "cts.config.ts");
  } catch (err) {
    assert.ok(err instanceof CtsError);
    return err.message;
  }
  assert.fail("the config was accepted");
}

describe("task classes built wrongly", () => {
  it("names the class and shows the super() call when the constructor passes no options", () => {
    class NoOptions extends Task<ServicesCondition> {
      constructor() {
        super(undefined as never);
      }
      synthesize(): void {}
    }
    assert.throws(
      () => new NoOptions(),
      (err: CtsError) => err.code === "TASK_SHAPE_INVALID" && /Task class 'NoOptions'/.test(err.message) && /super\(\{ name: .*condition: services/.test(err.message),
    );
  });

  it("says that name and condition declared as class fields must go to super() instead", async () => {
    const dir = await mkdtemp(join(tmpdir(), "cts-shape-"));
    try {
      const file = join(dir, "cts.config.ts");
      await writeFile(
        file,
        `import { defineConfig, Task, services, type ServicesCondition } from ${JSON.stringify(PUBLIC_API)};
class FieldTask extends Task<ServicesCondition> {
  override readonly name = "field-task";
  override readonly condition = services({ names: ["web"] });
  synthesize(): void {}
}
// @ts-ignore the mistake under test: the inherited constructor wants options
export default defineConfig({ tasks: [new FieldTask()] });
`,
      );
      await assert.rejects(loadConfig(file), (err: CtsError) => {
        assert.equal(err.code, "TASK_SHAPE_INVALID");
        assert.match(err.message, /Task class 'FieldTask'/);
        assert.match(err.message, /declares 'name' and 'condition' as class fields/);
        assert.match(err.message, /pass them to super\(\)/);
        assert.ok(err.message.startsWith(file), "the message names the config file");
        return true;
      });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("asks for synthesize() when the class has none", () => {
    const noSynth = Object.assign(Object.create({ constructor: class Plain {} }), { name: "x", condition: services({ names: ["web"] }) });
    assert.match(problemsOf({ tasks: [noSynth] }), /tasks\[0\]\.synthesize is missing: class Plain must define synthesize\(scope, input\)/);
  });

  it("asks for an instance when the class itself is listed", () => {
    assert.match(problemsOf({ tasks: [WebPool] }), /tasks\[0\] is the class WebPool, not an instance\. Write `new WebPool\(\)`/);
  });

  it("names both classes of a duplicate task name and how to tell two instances apart", () => {
    const msg = problemsOf({ tasks: [new WebPool(), new WebPool()] });
    assert.match(msg, /tasks\[1\]\.name 'web-pool' is also the name of tasks\[0\] \(classes WebPool and WebPool\)/);
    assert.match(msg, /constructor\(name: string\)/);
  });

  it("names the class of a task whose options lack a condition", () => {
    class NoCondition extends Task<ServicesCondition> {
      constructor() {
        super({ name: "no-condition" } as never);
      }
      synthesize(): void {}
    }
    assert.match(problemsOf({ tasks: [new NoCondition()] }), /tasks\[0\]\.condition is missing\. .*\(class NoCondition\)/);
  });
});
