import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { ApiError } from "../../src/api/http-error.ts";
import { parseTask } from "../../src/api/task-request.ts";
import { parsePatchBody, patchedTask } from "../../src/api/task-patch.ts";
import { specToCts, taskToCts } from "../../src/cts/api/shape.ts";
import { ctsTaskSchema } from "../../src/api/task-schema.ts";

const base = { name: "t", module: "m", condition: { services: { names: ["a"] } } };
/** Values of every JSON type, so each field meets each wrong one. */
const WRONG = [null, 7, "x", true, [], ["a", 1], {}, { a: 1 }];
const TASK_FIELDS = ["name", "module", "version", "description", "enabled", "providers", "variables", "condition", "module_input", "buffer_period"];
const BLOCKS = { services: { names: ["a"] }, catalog_services: { regexp: "" }, consul_kv: { path: "p" }, schedule: { cron: "* * * * *" } };

function message(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    assert.ok(err instanceof ApiError, String(err));
    assert.equal(err.status, 400);
    return err.message;
  }
  return "";
}

describe("task schemas speak our messages, never zod's", () => {
  it("names the field in every problem with a wrong-typed task field", () => {
    for (const field of TASK_FIELDS)
      for (const value of WRONG) {
        const m = message(() => parseTask({ ...base, [field]: value }));
        if (m === "") continue; // a valid value for this field (e.g. {} for variables)
        assert.match(m, new RegExp(`^invalid task: task\\.${field}[ .]`), `${field}=${JSON.stringify(value)}: ${m}`);
        assert.doesNotMatch(m, /Invalid input|expected [a-z]+, received|Too small|Unrecognized key/, m);
      }
  });

  it("names the field in every problem inside condition blocks, module inputs and the buffer period", () => {
    const cases: [string, Record<string, unknown>][] = [];
    for (const [key, block] of Object.entries(BLOCKS))
      for (const field of [...Object.keys(block), "datacenter", "recurse", "node_meta", "cts_user_defined_meta", "use_as_module_input"])
        for (const value of WRONG) cases.push([key === "schedule" ? "task.condition" : `task.condition.${key}`, { ...base, condition: { [key]: { ...block, [field]: value } } }]);
    for (const key of ["services", "consul_kv"])
      for (const value of WRONG) cases.push([`task.module_input.${key}`, { ...base, condition: { schedule: BLOCKS.schedule }, module_input: { [key]: value } }]);
    for (const field of ["enabled", "min", "max", "other"]) for (const value of WRONG) cases.push(["task.buffer_period", { ...base, buffer_period: { [field]: value } }]);
    // The runtime names a schedule's cron problem task.condition.cron (its own check, after the schema).
    for (const [at, task] of cases) {
      const m = message(() => parseTask(task));
      if (m === "") continue;
      assert.ok(m.startsWith(`invalid task: ${at}`), `${JSON.stringify(task)}: ${m}`);
      assert.doesNotMatch(m, /Invalid input|expected [a-z]+, received|Too small|Unrecognized key/, m);
    }
  });

  it("reports a bad list item on the list, once", () => {
    const m = message(() => parseTask({ ...base, condition: { services: { names: ["", 1, " "] } } }));
    assert.equal(m, "invalid task: task.condition.services.names must be a non-empty list of strings.");
  });

  it("reports each unknown key, refused CTS fields with their fix", () => {
    const m = message(() => parseTask({ ...base, colour: 1, size: 2, source: "x" }));
    assert.match(m, /task\.source was renamed to module in CTS 0\.5\. Use task\.module\./);
    assert.match(m, /task\.colour is not a known field\. Use: name, module, .*origin\..*task\.size is not a known field/);
    assert.doesNotMatch(m, /Use: [^.]*source/, "refused fields are not offered");
  });

  it("checks a condition's keys before its block, and module_input against the condition", () => {
    assert.equal(message(() => parseTask({ ...base, condition: { colour: {}, services: {} } })), "invalid task: task.condition.colour is not a condition. Use services, catalog_services, consul_kv, nodes, intentions, config_entries or schedule.");
    assert.equal(message(() => parseTask({ ...base, condition: { ...BLOCKS } })), "invalid task: task.condition must have exactly one condition (got services, catalog_services, consul_kv, schedule).");
    assert.match(message(() => parseTask({ ...base, module: 1, module_input: { services: { names: ["b"] } } })), /task\.module must be a string.*task\.module_input\.services repeats the condition's type/);
  });

  it("infers the valid task's type from the schema (what the spec is built from)", () => {
    const parsed = ctsTaskSchema.parse({ ...base, module_input: { "consul-kv": { path: "cfg/" } }, buffer_period: { enabled: false } });
    assert.deepEqual(parsed.module_input?.["consul-kv"], { path: "cfg/" });
    assert.equal(parsed.buffer_period?.enabled, false);
  });

  it("PATCH names every problem of the body at once", () => {
    assert.equal(
      message(() => parsePatchBody({ colour: 1, enabled: 3, module: null }, "t")),
      "enabled must be true or false (got 3). module cannot be removed (it is required). the request body has unsupported keys: colour. PATCH takes: enabled, description, module, version, variables, condition, module_input, buffer_period, cts_after.",
    );
    assert.deepEqual(parsePatchBody({ name: "t", enabled: false, description: null }, "t"), { enabled: false, changes: { description: null } });
  });
});

describe("cts's own task fields in the create body: guards and cts_allow_empty (the CTS HCL keys)", () => {
  it("maps the guards block and cts_allow_empty onto the task, keys in any case", () => {
    const spec = parseTask({ ...base, guards: { max_destroy: 1, MAX_DESTROY_PERCENT: 20, never_empty: ["local_file"], approval: "always" }, Cts_Allow_Empty: false });
    assert.deepEqual(spec.guards, { maxDestroy: 1, maxDestroyPercent: 20, neverEmpty: ["local_file"] });
    assert.equal(spec.approval, "always");
    assert.equal(spec.allowEmpty, false);
    assert.deepEqual(parseTask({ ...base, guards: { approval: "guards" } }).guards, undefined);
  });

  it("answers 400 naming the field and the fix for every bad value", () => {
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ guards: { max_destroy: -1 } }, /task\.guards\.max_destroy must be a whole number ≥ 0 \(got -1\)/],
      [{ guards: { max_destroy: 1.5 } }, /task\.guards\.max_destroy must be a whole number/],
      [{ guards: { max_destroy: "3" } }, /task\.guards\.max_destroy must be a number \(got "3"\)/],
      [{ guards: { max_destroy_percent: 120 } }, /task\.guards\.max_destroy_percent must be a number from 0 to 100 \(got 120\)/],
      [{ guards: { never_empty: "local_file" } }, /task\.guards\.never_empty must be a list of resource types or addresses/],
      [{ guards: { never_empty: ["a b"] } }, /task\.guards\.never_empty\[0\] must be a resource type or address without spaces/],
      [{ guards: { approval: "sometimes" } }, /task\.guards\.approval must be "always" .* or "guards" .*got "sometimes"/],
      [{ guards: { check: true } }, /task\.guards\.check/],
      [{ guards: 3 }, /task\.guards must be an object/],
      [{ cts_allow_empty: "no" }, /task\.cts_allow_empty must be true or false \(got "no"\)/],
    ];
    for (const [extra, want] of cases) assert.match(message(() => parseTask({ ...base, ...extra })), want, JSON.stringify(extra));
  });
  it("a PATCH of another field keeps them: the task comes back whole (guards, approval, cts_allow_empty, cts_outputs, cts_sensitive_outputs)", () => {
    const spec = parseTask({ ...base, guards: { max_destroy: 1, never_empty: ["local_file"], approval: "always" }, cts_allow_empty: false, cts_outputs: ["pool_id"], cts_sensitive_outputs: ["token"] });
    const patched = parseTask(patchedTask(specToCts(spec), parsePatchBody({ description: "new words" }, spec.name)));
    assert.equal(patched.description, "new words");
    assert.deepEqual(patched.guards, { maxDestroy: 1, neverEmpty: ["local_file"] });
    assert.equal(patched.approval, "always");
    assert.equal(patched.allowEmpty, false);
    assert.deepEqual(patched.outputs, ["pool_id"]);
    assert.deepEqual(patched.sensitiveOutputs, ["token"]);
    const plain = specToCts(parseTask(base));
    for (const key of ["guards", "cts_allow_empty", "cts_outputs", "cts_sensitive_outputs"]) assert.equal(key in plain, false, `no ${key} when unset (CTS's shape)`);
    // GET shows them as the task was created with them.
    const shown = taskToCts({ name: spec.name, description: "", enabled: true, origin: "api", status: "successful", condition: spec.condition, inputs: {}, module: spec.module, version: "", variables: {}, bufferPeriod: { enabled: false, min: 0, max: 0 }, running: false, className: "ModuleTask", spec });
    assert.deepEqual(shown.guards, { max_destroy: 1, never_empty: ["local_file"], approval: "always" });
    assert.deepEqual([shown.cts_allow_empty, shown.cts_outputs, shown.cts_sensitive_outputs], [false, ["pool_id"], ["token"]]);
  });
});
