import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { ModuleTask, Task, Testing, expression, services, type ServicesCondition, type TaskInput, type TaskScope } from "../../src/index.ts";
import { KITS, type CdkKit } from "../fixtures/cdk-kits.ts";

const NASTY = '${file("/etc/hostname")}';

/** A task whose synthesize is the test's body. */
class Probe extends Task<ServicesCondition> {
  constructor(
    private readonly kit: CdkKit,
    private readonly body: (scope: TaskScope, input: TaskInput<ServicesCondition>) => void,
  ) {
    super({ name: "probe", condition: services({ names: ["web"] }) });
  }
  synthesize(scope: TaskScope, input: TaskInput<ServicesCondition>): void {
    this.kit.provider(scope);
    this.body(scope, input);
  }
}

for (const kit of KITS) {
const { App, Fn, Lazy, TerraformIterator, TerraformOutput, TerraformStack, TerraformVariable } = kit.lib;

function synth(metaValue: string, body: (scope: TaskScope, v: string) => void): Record<string, any> {
  const task = new Probe(kit, (scope, input) => body(scope, input.services[0]!.meta.v!));
  return Testing.synthTask(task, { services: [{ name: "web", id: "w1", meta: { v: metaValue } }] });
}

const content = (out: Record<string, any>, id = "f") => kit.read(out, id);

describe(`${kit.name} hooks: only ${kit.name}'s own expressions are live`, () => {
  it("keeps references live and a task's typed `${` literal", () => {
    const out = synth(NASTY, (scope, v) => {
      const a = kit.sink(scope, "a", v);
      kit.sink(scope, "f", `${a}|\${path.module}|${v}`);
    });
    assert.equal(content(out), `\${${kit.type}.a.id}|$\${path.module}|$${NASTY}`);
    assert.equal(content(out, "a"), `$${NASTY}`);
  });

  it("expression() is the way to write a live expression by hand", () => {
    const out = synth("x", (scope) => kit.sink(scope, "f", `${expression("path.module")}/f`));
    assert.equal(content(out), "${path.module}/f");
  });

  it("escapes values and keys inside Fn calls (quotes, backslashes, newlines, openers)", () => {
    const v = 'a"), file("/x"), ("\\\n${y}';
    const out = synth(v, (scope, value) => kit.sink(scope, "f", Fn.jsonencode({ [value]: Fn.join(",", [value, value]) })));
    assert.equal(content(out), '${jsonencode({"a\\"), file(\\"/x\\"), (\\"\\\\\\n$${y}" = join(",", ["a\\"), file(\\"/x\\"), (\\"\\\\\\n$${y}", "a\\"), file(\\"/x\\"), (\\"\\\\\\n$${y}"])})}');
  });

  it("takes catalog text shaped like a cdktf string, list, map or number token as text", () => {
    for (const v of ["${TfToken[TOKEN.1]}", "#{TfToken[TOKEN.2]}", "&{TfToken[TOKEN.3]}", "-1.8881545897087626e+289"]) {
      const out = synth(v, (scope, value) => {
        new TerraformVariable(scope, "decoy", { type: "string" }).stringValue; // registers tokens
        kit.sink(scope, "f", value);
        kit.sink(scope, "g", Fn.join("", [value]));
      });
      const literal = v.replace(/^\$\{/, () => "$${");
      assert.equal(content(out), literal, v);
      assert.equal(content(out, "g"), `\${join("", ["${literal}"])}`, v);
    }
  });

  it("treats a Lazy value's string as text and an iterator's values as live", () => {
    const out = synth(NASTY, (scope, v) => {
      kit.sink(scope, "f", Lazy.stringValue({ produce: () => v }));
      const it = TerraformIterator.fromList([v, "b"]);
      kit.sink(scope, "each", it.value, it);
    });
    assert.equal(content(out), `$${NASTY}`);
    assert.equal(content(out, "each"), "${each.value}");
    assert.match(out.resource[kit.type].each.for_each, /^\$\{toset\(\["\$\$\{file\(\\"\/etc\/hostname\\"\)\}", "b"\]\)\}$/);
  });

  it("writes outputs and variable defaults from catalog data as literal text", () => {
    const out = synth(NASTY, (scope, v) => {
      new TerraformOutput(scope, "o", { value: { [v]: [v] } });
      new TerraformVariable(scope, "d", { type: "string", default: v });
    });
    assert.deepEqual(out.output.o.value, { [`$${NASTY}`]: [`$${NASTY}`] });
    assert.equal(out.variable.d.default, `$${NASTY}`);
  });

  it("does not print catalog text through cdktf's escape-sequence warning", () => {
    const warned: unknown[] = [];
    const warn = console.warn;
    console.warn = (...args: unknown[]) => void warned.push(args);
    try {
      synth(NASTY, (scope, v) => kit.sink(scope, "f", Fn.upper(v)));
    } finally {
      console.warn = warn;
    }
    assert.deepEqual(warned, []);
  });

  it(`leaves ${kit.name} as shipped outside a synthesis (a user's own ${kit.name} app)`, () => {
    const app = new App({ outdir: "/tmp", skipValidation: true });
    const stack = new TerraformStack(app, "plain");
    kit.provider(stack);
    kit.sink(stack, "f", "${path.module}");
    const tf = JSON.parse(JSON.stringify((stack as any).toTerraform()));
    assert.equal(content(tf), "${path.module}");
  });

  it(`writes a ModuleTask into a ${kit.name} stack exactly as it synthesizes alone (no double escaping)`, () => {
    const task = new ModuleTask({ name: "mod", condition: services({ names: ["web"] }), module: "org/mod/x", variables: { note: NASTY } });
    const input = { services: [{ name: "web", id: "w1", meta: { v: NASTY } }] };
    const alone = Testing.synthTask(task, input);
    // The anchor puts the task on this library (a task without elements runs on the default one).
    const probe = new Probe(kit, (scope) => {
      kit.sink(scope, "anchor", "x");
      task.synthesize(scope, { services: [] } as never);
    });
    const viaStack = Testing.synthTask(probe, input);
    assert.equal(viaStack["//"].metadata.version, kit.version, "synthesized on the task's library");
    assert.equal(viaStack.module.mod.note, alone.module.mod.note);
    assert.equal(alone.module.mod.note, `$${NASTY}`);
    assert.equal(Object.values<any>(alone.module.mod.services)[0].meta.v, `$${NASTY}`);
  });
});
}
