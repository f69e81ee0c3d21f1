import { describe, it } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import { Testing } from "../../src/testing.ts";
import { ConcatCases, expectedContent, hclTemplateValue, type ConcatCase, type Shape } from "../fixtures/untrusted-cases.ts";
import { caseArbitrary, instancesFor } from "../fixtures/untrusted-arbitraries.ts";

/** Reads `${join("sep", ["a", …])}` / `${format("spec", "a", …)}` the way Terraform would (HCL string escapes, then template escapes). */
function evalFunction(content: string): string {
  const m = /^\$\{(join|format)\((.*)\)\}$/s.exec(content);
  assert.ok(m, `not a function call: ${content}`);
  const strings = [...m[2]!.matchAll(/"((?:[^"\\]|\\.)*)"/g)].map((q) => hclTemplateValue(q[1]!.replace(/\\(["\\nt])/g, (_, e: string) => (e === "n" ? "\n" : e === "t" ? "\t" : e))));
  const [first, ...rest] = strings;
  if (m[1] === "join") return rest.join(first!);
  let i = 0;
  return first!.replace(/%s/g, () => rest[i++]!);
}

function contentOf(c: ConcatCase, values: string[]): string {
  const task = new ConcatCases("prop", "/tmp/cts-prop", [c]);
  const out = Testing.synthTask(task, { services: instancesFor(0, c.shape, values) });
  return out.resource.local_file["case-0"].content as string;
}

const FUNCTION_SHAPES: Shape[] = ["fnJoin", "fnFormat"];

describe("catalog strings combined by task code (property)", () => {
  it("never form a live Terraform opener or a cdktf token, and evaluate to exactly the raw text", () => {
    fc.assert(
      fc.property(caseArbitrary(), ({ c, values }) => {
        const content = contentOf(c, values);
        // hclTemplateValue throws on any live `${`/`%{` except constant strings; cdktf tokens would
        // have been resolved (or thrown) during synthesis and show up as a different value.
        const got = FUNCTION_SHAPES.includes(c.shape) ? evalFunction(content) : hclTemplateValue(content);
        assert.equal(got, expectedContent(c, values), `content: ${JSON.stringify(content)}`);
      }),
      {
        numRuns: 400,
        examples: [
          [{ c: { shape: "handlebars", lits: [] }, values: ["$", '{file("/etc/hostname")}'] }],
          [{ c: { shape: "mixed", lits: ["", "{x}"] }, values: ["$"] }],
          [{ c: { shape: "mixed", lits: ["", '${"T"}'] }, values: ["US$"] }],
          [{ c: { shape: "mixed", lits: ["$", ""] }, values: ["{x}"] }],
          [{ c: { shape: "fnJoin", lits: [""] }, values: ["$", "{x}"] }],
          [{ c: { shape: "fnJoin", lits: [","] }, values: ['a"), file("/etc/hostname"), ("', "b"] }],
          [{ c: { shape: "fnFormat", lits: ["-"] }, values: ['q"r', "c\\d", '\\"'] }],
          [{ c: { shape: "keys", lits: [] }, values: ["%", "{ if }"] }],
        ],
      },
    );
  });
});
