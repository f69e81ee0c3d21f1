import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { request } from "node:http";
import { createApiServer, type ApiServer } from "../../src/api/server.ts";
import type { ApiController } from "../../src/api/deps.ts";
import { foldKeys, TASK_SHAPE } from "../../src/cts/api/decode.ts";
import { decodeVariables, encodeValue, encodeVariables } from "../../src/cts/api/variables.ts";
import { ApiError } from "../../src/api/http-error.ts";
import { knownSecrets, REDACTED } from "../../src/secrets/redactor.ts";
import { createLogger } from "../../src/log/logger.ts";
import { EventStore, makeEvent } from "../../src/runtime/events.ts";
import type { RunOutcome, TaskView } from "../../src/runtime/controller.ts";
import type { ModuleTaskSpec } from "../../src/synth/task-ref.ts";
import { services } from "../../src/task/conditions.ts";
import { ctsGoClient, ctsVariables, ctyJson } from "../support/cts-go-client.ts";

const decode = (vars: Record<string, unknown>) => decodeVariables(vars, "task.variables");
async function refused(vars: Record<string, unknown>, message: RegExp): Promise<void> {
  await assert.rejects(decode(vars), (err: unknown) => err instanceof ApiError && err.status === 400 && message.test(err.message));
}

describe("task variables in CTS's HCL-encoded form and as plain JSON", () => {
  it("decodes what CTS's client sends (cty JSON text) to the values it stands for", async () => {
    const sent = ctsVariables({ output_path: "/tmp/x.txt", port: 8080, ratio: 1.5, neg: -2, on: true, tags: ["a", "b"], zone: { "zone-id": "Z1", n: 2 }, html: "a&b<c>" });
    assert.equal(sent.output_path, '"/tmp/x.txt"');
    assert.deepEqual(await decode(sent), { output_path: "/tmp/x.txt", port: 8080, ratio: 1.5, neg: -2, on: true, tags: ["a", "b"], zone: { "zone-id": "Z1", n: 2 }, html: "a&b<c>" });
  });

  it("decodes HCL syntax a hand-written request may use: heredocs, `=` objects, trailing commas, $${", async () => {
    assert.deepEqual(await decode({ a: "<<EOT\nline\nEOT", b: '{ k = "v", n = 1 }', c: '["x", "y",]', d: '"$${not_a_template}"', e: '"tab\\there"' }), {
      a: "line\n",
      b: { k: "v", n: 1 },
      c: ["x", "y"],
      d: "${not_a_template}",
      e: "tab\there",
    });
  });

  it("keeps plain JSON values (numbers, bools, lists, objects) and plain strings that are no HCL value", async () => {
    assert.deepEqual(await decode({ n: 3, b: false, l: ["x"], o: { a: "1" }, path: "/tmp/x.txt", region: "us-east-1", words: "hello world", tpl: "${x}" }), {
      n: 3,
      b: false,
      l: ["x"],
      o: { a: "1" },
      path: "/tmp/x.txt",
      region: "us-east-1",
      words: "hello world",
      tpl: "${x}",
    });
  });

  it("reads bare true/false and numbers written as they print as HCL values", async () => {
    assert.deepEqual(await decode({ t: "true", f: "false", i: "5", z: "0", neg: "-3", dec: "2.25" }), { t: true, f: false, i: 5, z: 0, neg: -3, dec: 2.25 });
  });

  it("refuses numbers whose text would change (0755, 1.50, 1e3, huge) instead of silently rewriting them", async () => {
    await refused({ mode: "0755" }, /task\.variables\.mode '0755' is ambiguous: in CTS's encoding it is the number 755.*Send "\\"0755\\"" for the text, or the JSON number 755/);
    await refused({ v: "1.50" }, /'1\.50' is ambiguous/);
    await refused({ v: "1e3" }, /'1e3' is ambiguous/);
    await refused({ v: "12345678901234567890" }, /is ambiguous/);
  });

  it("refuses encoded-looking values that are not one literal HCL value, and null, naming every problem", async () => {
    await refused({ a: '"unclosed', b: "[oops", c: '"${var.x}"', d: '"a"\nother = 1', e: "null" }, /task\.variables\.a looks HCL-encoded.*task\.variables\.b looks HCL-encoded.*task\.variables\.c looks HCL-encoded.*template.*task\.variables\.d looks HCL-encoded.*task\.variables\.e is null/s);
    await refused({ upper: '[upper("x")]' }, /task\.variables\.upper looks HCL-encoded .* is an expression; variables take literal values only/);
  });

  it("encodes answers in CTS's form, and decoding an answer gives the values back (round trip)", async () => {
    const values = { s: "/tmp/x", quoted: '"x"', tpl: "${x} %{y}", dollars: "$${x} %%{y} $", spaced: "  padded  ", ctl: "a\bb\fc\\d\n", n: 7, l: [1, "two"], o: { "k-1": true } };
    const encoded = encodeVariables(values);
    assert.equal(encoded.s, '"/tmp/x"');
    assert.equal(encoded.tpl, '"\\u0024{x} \\u0025{y}"');
    assert.equal(encodeValue("a\bb"), '"a\\u0008b"', "HCL has no \\b escape");
    assert.deepEqual(await decode(encoded), values);
    const { tpl: _t, dollars: _d, ctl: _c, ...plain } = values;
    assert.deepEqual(await decode(ctsVariables(plain)), plain, "cty's HTML-escaped form decodes the same");
    // Go writes `${` raw and \b as `\b`: CTS's own server fails on those too (a template; no such escape).
    await refused(ctsVariables({ tpl: "${x}" }), /tpl looks HCL-encoded .* template/);
  });
});

describe("variables in answers never carry a known secret", () => {
  it("redacts before encoding, so a secret with a quote or backslash is not hidden by escaping", () => {
    const secret = 'pa"ss\\word-for-encode-test';
    knownSecrets.add(secret);
    const encoded = encodeVariables({ password: secret, other: `x ${secret} y` });
    assert.ok(!JSON.stringify(encoded).includes("word-for-encode-test"), JSON.stringify(encoded));
    assert.equal(encoded.password, JSON.stringify(REDACTED));
  });
});

describe("a run's resource addresses in events", () => {
  it("are stored with a known secret redacted (a for_each key can carry catalog or KV text)", () => {
    const secret = "token-in-an-address-77";
    knownSecrets.add(secret);
    const events = new EventStore();
    events.add(makeEvent("t", new Date(), { success: true, outcome: "applied", changes: { add: 1, change: 0, destroy: 0 }, resources: [{ address: `local_file.f["${secret}"]`, action: "create" }] }));
    assert.deepEqual(events.list("t")[0]!.resources, [{ address: `local_file.f["${REDACTED}"]`, action: "create" }]);
  });
});

describe("JSON keys match case-insensitively, as CTS's Go server decodes them", () => {
  it("renames Go-cased keys at every level but leaves user keys (variables, meta) alone", () => {
    const folded = foldKeys(
      { Name: "t", MODULE: "m", Condition: { Services: { Names: ["web"], CTS_User_Defined_Meta: { Owner: "x" } } }, Variables: { Output_Path: "p" }, Buffer_Period: { Enabled: false } },
      TASK_SHAPE,
      "task",
    );
    assert.deepEqual(folded, { name: "t", module: "m", condition: { services: { names: ["web"], cts_user_defined_meta: { Owner: "x" } } }, variables: { Output_Path: "p" }, buffer_period: { enabled: false } });
  });

  it("refuses a key given twice under different cases instead of keeping one silently", () => {
    assert.throws(() => foldKeys({ enabled: true, Enabled: false }, TASK_SHAPE, ""), /enabled is given twice \(as 'enabled' and 'Enabled'/);
  });
});

/** An in-memory controller behind the API's interface. */
function fakeController() {
  const events = new EventStore();
  const views = new Map<string, TaskView>();
  const specs: ModuleTaskSpec[] = [];
  const view = (name: string, extra: Partial<TaskView> = {}): TaskView => ({
    name,
    description: "",
    enabled: true,
    origin: "config",
    status: events.status(name),
    condition: services({ names: ["web"] }),
    inputs: {},
    bufferPeriod: { enabled: false, min: 5000, max: 20000 },
    running: false,
    className: "WebPool",
    ...extra,
  });
  views.set("web", view("web"));
  events.add(makeEvent("web", new Date(), { success: true, outcome: "applied", changes: { add: 1, change: 0, destroy: 0 } }));
  const ok = (task: string, outcome = "applied"): RunOutcome => ({ task, ok: true, outcome, result: { changesPresent: true, summary: { add: 1, change: 0, destroy: 0 }, output: "+ plan" } });
  const ctrl: ApiController = {
    events,
    taskNames: () => [...views.keys()],
    view: (n) => (views.has(n) ? { ...views.get(n)!, status: events.status(n) } : undefined),
    runNow: async (n) => ok(n),
    setEnabled: async (n, e) => void views.set(n, { ...views.get(n)!, enabled: e }),
    planTask: async (n) => ok(n, "planned"),
    addModuleTask: (spec: ModuleTaskSpec) => {
      specs.push(spec);
      views.set(spec.name, view(spec.name, { origin: "api", module: spec.module, ...(spec.variables ? { variables: spec.variables } : {}), spec, className: "ModuleTask" }));
      return undefined as never;
    },
    dryRunModuleTask: async (spec) => ok(spec.name, "planned"),
    deleteTask: async (n) => void views.delete(n),
    replaceModuleTask: async () => undefined as never,
    checkDrift: async (n) => ok(n, "in-sync"),
    onActivity: () => () => {},
    approve: () => Promise.reject(new Error("not used")),
    reject: () => Promise.reject(new Error("not used")),
  };
  return { ctrl, specs };
}

describe("the API answers CTS's Go client as CTS does (fake controller)", () => {
  let server: ApiServer;
  let fake: ReturnType<typeof fakeController>;
  let go: ReturnType<typeof ctsGoClient>;
  let base: string;

  before(async () => {
    fake = fakeController();
    server = createApiServer({ controller: fake.ctrl, log: createLogger({ level: "error" }) });
    base = (await server.listen(0)).url;
    go = ctsGoClient(base);
  });
  after(() => server.close());

  it("answers every JSON body, success or error, with exactly `Content-Type: application/json`", async () => {
    for (const res of [await go.overall(), await go.taskStatus(), await go.getTask("web"), await go.getTask("nope"), await go.update("nope", false)]) assert.equal(res.contentType, "application/json", res.text);
  });

  it("accepts task disable's PATCH {\"Enabled\":false} sent without a Content-Type", async () => {
    const res = await go.update("web", false);
    assert.equal(res.status, 200, res.text);
    assert.equal(res.goError, undefined);
    assert.equal((await go.getTask("web")).body.task.enabled, false);
    assert.equal((await go.update("web", true)).status, 200);
  });

  it("still refuses a PATCH without Content-Type from a web page at another origin (403)", async () => {
    const res = await new Promise<{ status: number }>((resolve, reject) => {
      const req = request(new URL("/v1/tasks/web", base), { method: "PATCH", headers: { origin: "http://evil.example" } }, (r) => {
        r.resume();
        r.on("end", () => resolve({ status: r.statusCode ?? 0 }));
      });
      req.on("error", reject);
      req.end(JSON.stringify({ Enabled: false }));
    });
    assert.equal(res.status, 403);
    assert.equal((await go.getTask("web")).body.task.enabled, true);
  });

  it("answers PATCH of an unknown task 404 and a duplicate create 400, with the error shape CTS's client reads", async () => {
    const missing = await go.update("nope", true);
    assert.equal(missing.status, 404);
    assert.match(missing.goError!, /^request returned 404 status code with error: no task named 'nope'/);
    const task = { name: "dup", module: "./m", condition: { services: { names: ["web"] } } };
    assert.equal((await go.createTask(task)).status, 201);
    const again = await go.createTask(task);
    assert.equal(again.status, 400);
    assert.deepEqual(Object.keys(again.body).sort(), ["error", "request_id"]);
    assert.match(again.goError!, /with error: task with name dup already exists/);
  });

  it("creates with HCL-encoded variables decoded, and answers them HCL-encoded again", async () => {
    const res = await go.createTask({ name: "vars", module: "./m", condition: { services: { names: ["web"] } }, variables: ctsVariables({ output_path: "/tmp/x.txt", count_of: 2 }) });
    assert.equal(res.status, 201, res.text);
    assert.deepEqual(fake.specs.at(-1)!.variables, { output_path: "/tmp/x.txt", count_of: 2 });
    assert.deepEqual(res.body.task.variables, { output_path: ctyJson("/tmp/x.txt"), count_of: "2" });
  });

  it("answers the fields CTS still returns: version, a disabled buffer period as 0s/0s, status providers/services, event config", async () => {
    const task = (await go.getTask("web")).body.task;
    assert.equal(task.version, "");
    assert.deepEqual(task.buffer_period, { enabled: false, min: "0s", max: "0s" });
    const status = (await go.taskStatus("web", { include: "events" })).body.web;
    assert.deepEqual(status.providers, []);
    assert.deepEqual(status.services, []);
    const [event] = status.events;
    assert.deepEqual(event.config, { providers: [], services: [], source: "(task class WebPool)" });
    assert.equal(event.outcome, "applied", "our additions stay beside CTS's fields");
    assert.deepEqual(event.changes, { add: 1, change: 0, destroy: 0 });
  });
});
