import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { writeFile } from "node:fs/promises";
import { TerraformOutput } from "cdktf";
import { MAX_DATA_DEPTH, MAX_WALK_DEPTH, tooDeepAt } from "../../src/values/data-depth.ts";
import { CtsError } from "../../src/errors/cts-error.ts";
import { Redactor, REDACTED } from "../../src/secrets/redactor.ts";
import { stableStringify } from "../../src/synth/stable-json.ts";
import { initHash } from "../../src/terraform/init-hash.ts";
import { redactedError } from "../../src/terraform/redaction.ts";
import { parseHcl } from "../../src/config/hcl.ts";
import { readCtsFiles } from "../../src/cts/config/files.ts";
import { parseState } from "../../src/state/stored-state.ts";
import { moduleEntry } from "../../src/runtime/task-entry.ts";
import { ModuleTask, Task, Testing, services, type TaskScope } from "../../src/index.ts";
import { taskProblems } from "../../src/task/validate.ts";
import { tempDir } from "../support/cts.ts";

/** `depth` objects nested in one another around 1, built without recursion. */
function nest(depth: number, kind: "object" | "array" = "object"): unknown {
  let v: unknown = 1;
  for (let i = 0; i < depth; i++) v = kind === "object" ? { a: v } : [v];
  return v;
}

/** The JSON text of nest(depth) (JSON.stringify itself overflows at a few thousand levels). */
const nestText = (depth: number) => '{"a":'.repeat(depth) + "1" + "}".repeat(depth);

/** Asserts DATA_TOO_DEEP (not a RangeError from an overflowing stack). */
function tooDeep(fn: () => unknown, message: RegExp = /nests deeper than/): void {
  assert.throws(fn, (err: unknown) => {
    assert.ok(err instanceof CtsError, `expected DATA_TOO_DEEP, got ${String(err).slice(0, 200)}`);
    assert.equal(err.code, "DATA_TOO_DEEP");
    assert.match(err.message, message);
    return true;
  });
}

describe("how deep data nests", () => {
  it("counts levels of objects and lists as JSON nests them", () => {
    assert.equal(tooDeepAt(1, 0), undefined);
    assert.equal(tooDeepAt({}, 1), undefined);
    assert.equal(tooDeepAt({}, 0), "(the value itself)");
    assert.equal(tooDeepAt({ a: [1] }, 2), undefined);
    assert.equal(tooDeepAt({ a: [1] }, 1), "a");
    assert.equal(tooDeepAt(nest(64), 64), undefined);
    assert.notEqual(tooDeepAt(nest(65), 64), undefined);
  });

  it("names the first place too deep, in document order, with its root", () => {
    const value = { ok: { x: 1 }, "my var": [{ b: 1 }, { c: [1] }] };
    assert.equal(tooDeepAt(value, 3, "task.variables"), 'task.variables["my var"][1].c');
    assert.equal(tooDeepAt({ x: nest(200) }, 3), "x.a.a");
  });

  it("checks 100,000 levels without recursion", () => {
    const at = tooDeepAt(JSON.parse(nestText(100_000)), MAX_DATA_DEPTH);
    assert.match(at!, /^a\.a\.a/);
    assert.ok(at!.length <= 101, "the path is cut short");
    assert.equal(tooDeepAt(nest(100_000, "array"), 100_001), undefined);
  });
});

describe("recursive walks of user data stop with DATA_TOO_DEEP instead of overflowing the stack", () => {
  it("the redactor redacts up to the limit and refuses past it", () => {
    const r = new Redactor();
    r.add("s3cret-value");
    const ok = r.redactDeep({ v: nest(MAX_WALK_DEPTH - 2), s: "s3cret-value" });
    assert.equal(ok.s, REDACTED);
    tooDeep(() => r.redactDeep({ v: nest(5000) }));
    tooDeep(() => r.redactDeep(nest(MAX_WALK_DEPTH + 1, "array")));
  });

  it("sorted JSON (synthesis output) refuses past the limit", () => {
    assert.match(stableStringify(nest(MAX_WALK_DEPTH - 1)), /"a"/);
    tooDeep(() => stableStringify(nest(MAX_WALK_DEPTH + 1)));
    tooDeep(() => stableStringify(nest(10_000, "array")));
  });

  it("a task class that builds deeply nested configuration fails synthesis with DATA_TOO_DEEP, naming the task", () => {
    class Deep extends Task {
      constructor(readonly depth: number) {
        super({ name: "deep-output", condition: services({ names: ["web"] }) });
      }
      synthesize(scope: TaskScope): void {
        new TerraformOutput(scope, "o", { value: nest(this.depth) });
      }
    }
    tooDeep(() => Testing.synthTaskResult(new Deep(5000), {}), /Task 'deep-output': the configuration the task builds nests deeper than 200 levels/);
    assert.ok(Testing.synthTaskResult(new Deep(50), {}).bytes > 0);
  });

  it("hashing init inputs hashes a document too deep to walk as text: deterministic, any change re-inits, no overflow", () => {
    const deepFile = `{"terraform":{"backend":${nestText(5000)}}}`;
    const a = initHash("{}", { "extra.tf.json": deepFile });
    assert.equal(a, initHash("{}", { "extra.tf.json": deepFile }));
    assert.notEqual(a, initHash("{}", { "extra.tf.json": deepFile.replace("1", "2") }));
  });

  it("redacting a Terraform error with detail nested too deep keeps the error and shows a marker", () => {
    const err = new CtsError("TERRAFORM_FAILED", "external", "apply failed: s3cret", { task: "t", detail: { nested: nest(5000) } });
    const out = redactedError(err, (t) => t.replaceAll("s3cret", REDACTED)) as CtsError;
    assert.equal(out.code, "TERRAFORM_FAILED");
    assert.match(out.message, /\[redacted\]/);
    assert.match(JSON.stringify(out.detail), /nested too deep to show/);
  });
});

describe("deep data is refused where it enters", () => {
  it("HCL (task files, CTS configs, .tfvars) refuses values and blocks nested too deep at their line and column", async () => {
    const deepList = `v = ${"[".repeat(5000)}1${"]".repeat(5000)}\n`;
    await assert.rejects(parseHcl(deepList, "big.hcl", "CONFIG_INVALID"), (err: CtsError) => {
      assert.equal(err.code, "CONFIG_INVALID");
      assert.match(err.message, new RegExp(`^big\\.hcl:1:${4 + MAX_WALK_DEPTH + 1}: this nests deeper than ${MAX_WALK_DEPTH} levels`));
      return true;
    });
    const deepBlocks = "a {\n".repeat(300) + "}\n".repeat(300);
    await assert.rejects(parseHcl(deepBlocks, "blocks.hcl"), /blocks\.hcl:\d+:\d+: this nests deeper than/);
    await assert.rejects(parseHcl(`x = ${"[".repeat(65)}1${"]".repeat(65)}\n`, "t.tfvars", "TASK_FILE_INVALID", MAX_DATA_DEPTH), /nests deeper than 64 levels/);
    // A broken document nested deep still gets its syntax error, not a stack overflow.
    await assert.rejects(parseHcl(`v = ${"[".repeat(50_000)}\n`, "broken.hcl"), /broken\.hcl:1:1: unexpected/);
    assert.deepEqual((await parseHcl(`v = ${"[".repeat(MAX_WALK_DEPTH)}1${"]".repeat(MAX_WALK_DEPTH)}\n`)).attributes.size, 1);
  });

  it("a JSON CTS config nested too deep is CONFIG_INVALID naming the key", async () => {
    const tmp = await tempDir();
    try {
      const file = join(tmp.dir, "cts.json");
      await writeFile(file, `{"log_level":"INFO","consul":{"address":"x","tls":${nestText(5000)}}}`);
      await assert.rejects(readCtsFiles([file]), (err: CtsError) => {
        assert.equal(err.code, "CONFIG_INVALID");
        assert.match(err.message, new RegExp(`'consul\\.tls\\.a\\.a.*' nests deeper than ${MAX_WALK_DEPTH} levels`));
        return true;
      });
    } finally {
      await tmp.cleanup();
    }
  });

  it(`a module task's variables and provider settings nest at most ${MAX_DATA_DEPTH} levels, wherever the task comes from`, () => {
    const task = (variables: Record<string, unknown>, config?: Record<string, unknown>) =>
      new ModuleTask({ name: "lb", module: "./m", condition: services({ names: ["web"] }), variables, ...(config ? { providers: [{ name: "local", config }] } : {}) });
    assert.deepEqual(taskProblems(task({ v: nest(MAX_DATA_DEPTH - 1) })), []);
    const [problem] = taskProblems(task({ v: nest(MAX_DATA_DEPTH) }));
    assert.equal(problem?.field, "variables");
    assert.match(problem!.message, /nests deeper than 64 levels of objects and lists \(at variables\.v\.a\.a/);
    assert.deepEqual(
      taskProblems(task({}, { x: nest(5000) })).map((p) => p.field),
      ["providers[0].config"],
    );
    // API-created and restored tasks: TASK_INVALID before anything is registered.
    assert.throws(
      () => moduleEntry({ name: "lb", module: "./m", condition: services({ names: ["web"] }), variables: { v: nest(5000) } }),
      (err: CtsError) => err.code === "TASK_INVALID" && /task 'lb': variables nests deeper than 64 levels/.test(err.message),
    );
  });

  it("stored HA state nested too deep is set aside as a problem, not restored", () => {
    const prefix = "cts/state/";
    const spec = `{"name":"lb","module":"./m","condition":{"kind":"services","query":{"names":["web"]}},"variables":{"v":${nestText(5000)}}}`;
    const state = parseState(prefix, [
      { key: `${prefix}tasks/lb`, value: `{"name":"lb","origin":"api","enabled":true,"spec":${spec}}`, modifyIndex: 1n },
      { key: `${prefix}tasks/ok`, value: JSON.stringify({ name: "ok", origin: "config", enabled: false }), modifyIndex: 2n },
    ]);
    assert.deepEqual([...state.tasks.keys()], ["ok"]);
    assert.equal(state.problems.length, 1);
    assert.match(state.problems[0]!, /'cts\/state\/tasks\/lb': nests deeper than 256 levels \(at spec\.variables\.v\.a/);
  });
});
