import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import * as cdktf from "cdktf";
import { DataResource, Fn, TerraformIterator, TerraformOutput, TerraformVariable, Token, type TerraformMetaArguments } from "cdktn";
import { id, provider as randomProvider } from "@cdktn/provider-random";
import { file, provider as localProvider } from "@cdktf/provider-local";
import { CtsError } from "../../src/errors/cts-error.ts";
import { ModuleTask, Task, Testing, expression, services, type ServicesCondition, type TaskInput, type TaskScope } from "../../src/index.ts";
import { CDKTN } from "../fixtures/cdk-kits.ts";

const NASTY = '${file("/etc/hostname")}';
const WEB = { services: [{ name: "web", id: "w1", address: "10.0.0.1", meta: { v: NASTY } }] };

/** A task written with cdktn: its synthesize is the test's body. */
class CdktnTask extends Task<ServicesCondition> {
  constructor(
    private readonly body: (scope: TaskScope, input: TaskInput<ServicesCondition>) => void,
    name = "cdktn-task",
  ) {
    super({ name, condition: services({ names: ["web"] }) });
  }
  synthesize(scope: TaskScope, input: TaskInput<ServicesCondition>): void {
    this.body(scope, input);
  }
}

/** terraform_data (cdktn's built-in resource): `input` takes any value, typed as a map. */
const data = (scope: TaskScope, id: string, input: unknown, more: TerraformMetaArguments & { triggersReplace?: Record<string, string> } = {}) =>
  new DataResource(scope, id, { input: input as Record<string, unknown>, ...more });
const synth = (body: (scope: TaskScope, input: TaskInput<ServicesCondition>) => void, name?: string) => Testing.synthTask(new CdktnTask(body, name), WEB);
const meta = (input: TaskInput<ServicesCondition>) => input.services[0]!.meta.v!;

describe("a task written with cdktn", () => {
  it("synthesizes on cdktn's App and stack even when cdktf is loaded too", () => {
    const out = synth((scope) => void data(scope, "a", "x"));
    assert.equal(out["//"].metadata.version, CDKTN.version);
    assert.deepEqual(out.resource.terraform_data.a.input, "x");
  });

  it("writes a cdktn reference as a live expression and catalog text literally", () => {
    const out = synth((scope, input) => {
      const a = data(scope, "a", meta(input));
      data(scope, "b", `${a.output}/${meta(input)}`, { triggersReplace: { id: a.id } });
    });
    assert.equal(out.resource.terraform_data.a.input, `$${NASTY}`);
    assert.equal(out.resource.terraform_data.b.input, `\${terraform_data.a.output}/$${NASTY}`);
    assert.deepEqual(out.resource.terraform_data.b.triggers_replace, { id: "${terraform_data.a.id}" });
  });

  it("writes cdktn's Fn calls as live expressions with catalog arguments quoted (no _recordFunctionUsage failure)", () => {
    const out = synth((scope, input) => {
      const a = data(scope, "a", "x");
      new TerraformOutput(scope, "o", { value: Fn.upper(Fn.join(",", [Token.asString(a.output), meta(input)])) });
    });
    assert.equal(out.output.o.value, '${upper(join(",", [terraform_data.a.output, "$${file(\\"/etc/hostname\\")}"]))}');
  });

  it("writes a cdktn iterator's each.value live and its catalog list literally", () => {
    const out = synth((scope, input) => {
      const each = TerraformIterator.fromList([meta(input), "b"]);
      data(scope, "each", each.value, { forEach: each });
    });
    assert.equal(out.resource.terraform_data.each.input, "${each.value}");
    assert.equal(out.resource.terraform_data.each.for_each, '${toset(["$${file(\\"/etc/hostname\\")}", "b"])}');
  });

  it("writes overrides (escape hatches) of cdktn constructs: catalog text literal, references live", () => {
    const out = synth((scope, input) => {
      const a = data(scope, "a", "x");
      const b = data(scope, "b", "y");
      b.addOverride("input", meta(input));
      b.addOverride("lifecycle.replace_triggered_by", [a.fqn]);
      scope.addOverride("locals.note", `${a.output}-${meta(input)}`);
    });
    assert.equal(out.resource.terraform_data.b.input, `$${NASTY}`);
    assert.deepEqual(out.resource.terraform_data.b.lifecycle.replace_triggered_by, ["${terraform_data.a}"]);
    assert.equal(out.locals.note, `\${terraform_data.a.output}-$${NASTY}`);
  });

  it("uses a @cdktn/provider-* binding like a @cdktf one, and expression() on cdktn", () => {
    const out = synth((scope, input) => {
      new randomProvider.RandomProvider(scope, "random");
      const rid = new id.Id(scope, "rid", { byteLength: 4, keepers: { v: meta(input), dir: expression("path.module") } });
      new TerraformVariable(scope, "d", { type: "string", default: meta(input) });
      new TerraformOutput(scope, "hex", { value: rid.hex });
    });
    assert.deepEqual(out.resource.random_id.rid.keepers, { v: `$${NASTY}`, dir: "${path.module}" });
    assert.equal(out.variable.d.default, `$${NASTY}`);
    assert.equal(out.output.hex.value, "${random_id.rid.hex}");
    assert.equal(out.terraform.required_providers.random.source, "hashicorp/random");
  });

  it("works with Testing's assertions", () => {
    const out = synth((scope, input) => {
      new randomProvider.RandomProvider(scope, "random");
      data(scope, "a", meta(input));
    });
    Testing.assertHasResource(out, "terraform_data", { input: `$${NASTY}` });
    Testing.assertResourceCount(out, "terraform_data", 1);
    Testing.assertProviderConfigured(out, "random");
    Testing.assertNoInterpolation(out, "terraform_data");
  });

  it("writes a ModuleTask into a cdktn stack as it synthesizes alone", () => {
    const mod = new ModuleTask({ name: "mod", condition: services({ names: ["web"] }), module: "org/mod/x", variables: { note: NASTY } });
    const out = synth((scope) => {
      data(scope, "anchor", "x");
      mod.synthesize(scope, WEB as never);
    }, "mod");
    assert.equal(out["//"].metadata.version, CDKTN.version);
    assert.equal(out.module.mod.note, Testing.synthTask(mod, WEB).module.mod.note);
  });
});

describe("a task mixing cdktf and cdktn", () => {
  const refused = (body: (scope: TaskScope) => void) =>
    assert.throws(
      () => Testing.synthTask(new CdktnTask(body, "mixed"), WEB),
      (err: unknown) => {
        assert.ok(err instanceof CtsError, String(err));
        assert.equal(err.code, "TASK_CDK_MIXED");
        assert.match(err.message, /^Task 'mixed': mixes two CDK libraries/);
        assert.match(err.message, /'cdktf' and '@cdktf\/provider-\*'/);
        assert.match(err.message, /'cdktn' and '@cdktn\/provider-\*'/);
        return true;
      },
    );

  it("is refused when it builds constructs of both (a cdktf provider, a cdktn resource), naming both", () => {
    refused((scope) => {
      new localProvider.LocalProvider(scope, "local");
      data(scope, "a", "x");
    });
  });

  it("is refused when a cdktn Fn call lands in a cdktf resource", () => {
    refused((scope) => {
      new localProvider.LocalProvider(scope, "local");
      new file.File(scope, "f", { filename: "/tmp/f", content: Fn.upper("x") });
    });
  });

  it("is refused when a cdktf reference lands in a cdktn resource", () => {
    refused((scope) => {
      const v = new cdktf.TerraformVariable(scope, "v", { type: "string" });
      data(scope, "a", v.stringValue);
    });
  });

  it("is refused when a cdktf Fn call lands in a cdktn resource", () => {
    refused((scope) => void data(scope, "a", cdktf.Fn.upper("x")));
  });
});

describe("the literal-text hooks, per library", () => {
  it("refuse a synthesis on a library whose token files are not all hooked (cdktf loaded, cdktn not)", () => {
    // A fresh process: in this one both libraries are loaded and hooked.
    const script = `
      require("cdktf");
      const { hookLoadedCdks } = require(${JSON.stringify(new URL("../../src/cdktf/cdktf-literals.ts", import.meta.url).pathname)});
      hookLoadedCdks("cdktf");
      try { hookLoadedCdks("cdktn"); console.log("hooked"); } catch (err) { console.log(err.code + ": " + err.message); }`;
    const out = execFileSync(process.execPath, ["--conditions=cts-source", "--import", "tsx", "-e", script], { encoding: "utf8" });
    assert.match(out, /^CTS_INTERNAL: cdktn's tokens\/private\/encoding\.js, .* was not found loaded, so literal text cannot be marked and nothing is synthesized/);
  });
});
