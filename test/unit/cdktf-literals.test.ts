import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { file, provider } from "@cdktf/provider-local";
import { App, Fn, Lazy, TerraformIterator, TerraformOutput, TerraformStack, TerraformVariable } from "cdktf";
import { ModuleTask, Task, Testing, expression, services, type ServicesCondition, type TaskInput, type TaskScope } from "../../src/index.ts";

const NASTY = '${file("/etc/hostname")}';

/** A task whose synthesize is the test's body. */
class Probe extends Task<ServicesCondition> {
  constructor(private readonly body: (scope: TaskScope, input: TaskInput<ServicesCondition>) => void) {
    super({ name: "probe", condition: services({ names: ["web"] }) });
  }
  synthesize(scope: TaskScope, input: TaskInput<ServicesCondition>): void {
    new provider.LocalProvider(scope, "local");
    this.body(scope, input);
  }
}

function synth(metaValue: string, body: (scope: TaskScope, v: string) => void): Record<string, any> {
  const task = new Probe((scope, input) => body(scope, input.services[0]!.meta.v!));
  return Testing.synthTask(task, { services: [{ name: "web", id: "w1", meta: { v: metaValue } }] });
}

const content = (out: Record<string, any>, id = "f") => out.resource.local_file[id].content as string;

describe("cdktf hooks: only cdktf's own expressions are live", () => {
  it("keeps references live and a task's typed `${` literal", () => {
    const out = synth(NASTY, (scope, v) => {
      const a = new file.File(scope, "a", { filename: "/tmp/a", content: v });
      new file.File(scope, "f", { filename: "/tmp/f", content: `${a.id}|\${path.module}|${v}` });
    });
    assert.equal(content(out), `\${local_file.a.id}|$\${path.module}|$${NASTY}`);
    assert.equal(content(out, "a"), `$${NASTY}`);
  });

  it("expression() is the way to write a live expression by hand", () => {
    const out = synth("x", (scope) => new file.File(scope, "f", { filename: `${expression("path.module")}/f`, content: "x" }));
    assert.equal(out.resource.local_file.f.filename, "${path.module}/f");
  });

  it("escapes values and keys inside Fn calls (quotes, backslashes, newlines, openers)", () => {
    const v = 'a"), file("/x"), ("\\\n${y}';
    const out = synth(v, (scope, value) => new file.File(scope, "f", { filename: "/tmp/f", content: Fn.jsonencode({ [value]: Fn.join(",", [value, value]) }) }));
    assert.equal(content(out), '${jsonencode({"a\\"), file(\\"/x\\"), (\\"\\\\\\n$${y}" = join(",", ["a\\"), file(\\"/x\\"), (\\"\\\\\\n$${y}", "a\\"), file(\\"/x\\"), (\\"\\\\\\n$${y}"])})}');
  });

  it("takes catalog text shaped like a cdktf string, list, map or number token as text", () => {
    for (const v of ["${TfToken[TOKEN.1]}", "#{TfToken[TOKEN.2]}", "&{TfToken[TOKEN.3]}", "-1.8881545897087626e+289"]) {
      const out = synth(v, (scope, value) => {
        new TerraformVariable(scope, "decoy", { type: "string" }).stringValue; // registers tokens
        new file.File(scope, "f", { filename: "/tmp/f", content: value });
        new file.File(scope, "g", { filename: "/tmp/g", content: Fn.join("", [value]) });
      });
      const literal = v.replace(/^\$\{/, () => "$${");
      assert.equal(content(out), literal, v);
      assert.equal(content(out, "g"), `\${join("", ["${literal}"])}`, v);
    }
  });

  it("treats a Lazy value's string as text and an iterator's values as live", () => {
    const out = synth(NASTY, (scope, v) => {
      new file.File(scope, "f", { filename: "/tmp/f", content: Lazy.stringValue({ produce: () => v }) });
      const it = TerraformIterator.fromList([v, "b"]);
      new file.File(scope, "each", { forEach: it, filename: `/tmp/${it.value}`, content: it.value });
    });
    assert.equal(content(out), `$${NASTY}`);
    assert.equal(out.resource.local_file.each.content, "${each.value}");
    assert.match(out.resource.local_file.each.for_each, /^\$\{toset\(\["\$\$\{file\(\\"\/etc\/hostname\\"\)\}", "b"\]\)\}$/);
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
      synth(NASTY, (scope, v) => new file.File(scope, "f", { filename: "/tmp/f", content: Fn.upper(v) }));
    } finally {
      console.warn = warn;
    }
    assert.deepEqual(warned, []);
  });

  it("leaves cdktf as shipped outside a synthesis (a user's own cdktf app)", () => {
    const app = new App({ outdir: "/tmp", skipValidation: true });
    const stack = new TerraformStack(app, "plain");
    new provider.LocalProvider(stack, "local");
    new file.File(stack, "f", { filename: "/tmp/f", content: "${path.module}" });
    const tf = JSON.parse(JSON.stringify((stack as any).toTerraform()));
    assert.equal(tf.resource.local_file.f.content, "${path.module}");
  });

  it("writes a ModuleTask into a cdktf stack exactly as it synthesizes alone (no double escaping)", () => {
    const task = new ModuleTask({ name: "mod", condition: services({ names: ["web"] }), module: "org/mod/x", variables: { note: NASTY } });
    const input = { services: [{ name: "web", id: "w1", meta: { v: NASTY } }] };
    const alone = Testing.synthTask(task, input);
    const viaStack = Testing.synthTask(new Probe((scope) => task.synthesize(scope, { services: [] } as never)), input);
    assert.equal(viaStack.module.mod.note, alone.module.mod.note);
    assert.equal(alone.module.mod.note, `$${NASTY}`);
    assert.equal(Object.values<any>(alone.module.mod.services)[0].meta.v, `$${NASTY}`);
  });
});
