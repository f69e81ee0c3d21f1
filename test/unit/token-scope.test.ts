import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { file, provider } from "@cdktf/provider-local";
import { Task, services, type ServicesCondition, type TaskInput, type TaskScope } from "../../src/index.ts";
import { inProcessSynthesizer } from "../../src/synth/synthesizer.ts";
import { tokenCount, withTokenScope } from "../../src/synth/token-scope.ts";
import { cdktf } from "../../src/cdktf/load.ts";

/** Ten files, each referencing the one before: every synthesis registers tokens. */
class Chain extends Task<ServicesCondition> {
  constructor() {
    super({ name: "chain", condition: services({ names: ["web"] }) });
  }
  synthesize(scope: TaskScope, input: TaskInput<ServicesCondition>): void {
    new provider.LocalProvider(scope, "local");
    let prev: file.File | undefined;
    for (let i = 0; i < 10; i++) prev = new file.File(scope, `f${i}`, { filename: `/tmp/chain/${i}`, content: prev ? `${prev.id} ${input.services.length}` : "first" });
  }
}

describe("the tokens of a synthesis", () => {
  it("are forgotten after it: 200 syntheses leave cdktf's global token map as it was", async () => {
    const task = new Chain();
    const synth = inProcessSynthesizer(() => task);
    const ref = { kind: "config" as const, configFile: "x", name: "chain" };
    const first = await synth.synth(ref, { services: [] } as never, {});
    const before = tokenCount();
    for (let i = 0; i < 200; i++) await synth.synth(ref, { services: [] } as never, {});
    assert.equal(tokenCount(), before);
    const last = await synth.synth(ref, { services: [] } as never, {});
    assert.equal(last.json, first.json, "the output does not depend on earlier syntheses' tokens");
    assert.match(last.json, /\$\{local_file\.f0\.id\}/, "references still resolve");
  });

  it("made before the synthesis are kept, and a synthesis that throws is cleaned up too", () => {
    const { Token, Lazy } = cdktf();
    const kept = Token.asString(Lazy.stringValue({ produce: () => "kept" }));
    const before = tokenCount();
    assert.throws(() =>
      withTokenScope(() => {
        Token.asString(Lazy.stringValue({ produce: () => "dropped" }));
        throw new Error("task failed");
      }),
    );
    assert.equal(tokenCount(), before);
    assert.ok(Token.isUnresolved(kept), "a token from before is still known");
  });
});

describe("warming up the CDK", () => {
  it("synthesizes a stack of cts's own and leaves no token behind", async () => {
    const { warmUpCdk } = await import("../../src/synth/warm-up.ts");
    warmUpCdk();
    const before = tokenCount();
    warmUpCdk();
    assert.equal(tokenCount(), before);
  });
});
