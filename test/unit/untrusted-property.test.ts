import { describe, it } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import { Testing } from "../../src/testing.ts";
import { CaseViews, ConcatCases, expectedContent, hclTemplateValue, type ConcatCase, type Shape } from "../fixtures/untrusted-cases.ts";
import { caseArbitrary, instancesFor } from "../fixtures/untrusted-arbitraries.ts";
import { KITS, type CdkKit } from "../fixtures/cdk-kits.ts";

/** An HCL quoted string's content as HCL reads it: its template (leads before `{`), then its escapes. */
function hclString(quoted: string): string {
  return hclTemplateValue(quoted).replace(/\\(["\\nrt]|u[0-9a-fA-F]{4})/g, (_, e: string) =>
    e === "n" ? "\n" : e === "r" ? "\r" : e === "t" ? "\t" : e.length === 5 ? String.fromCharCode(parseInt(e.slice(1), 16)) : e,
  );
}
const QUOTED = /"((?:[^"\\]|\\.)*)"/gs;

/** Reads `${join("sep", ["a", …])}`, `${format("spec", "a", …)}` or `${jsonencode({"k" = 1, …})}` the way Terraform would. */
function evalFunction(content: string): string {
  const m = /^\$\{(join|format|jsonencode)\((.*)\)\}$/s.exec(content);
  assert.ok(m, `not a function call: ${JSON.stringify(content)}`);
  const strings = [...m[2]!.matchAll(QUOTED)].map((q) => hclString(q[1]!));
  if (m[1] === "jsonencode") return JSON.stringify(strings.sort());
  const [first, ...rest] = strings;
  if (m[1] === "join") return rest.join(first!);
  let i = 0;
  return first!.replace(/%s/g, () => rest[i++]!);
}

function contentOf(c: ConcatCase, values: string[], kit: CdkKit): string {
  const task = new ConcatCases("prop", "/tmp/cts-prop", [c], kit);
  const out = Testing.synthTask(task, { services: instancesFor(0, c.shape, values) });
  assert.equal(out["//"].metadata.version, kit.version, `synthesized on ${kit.name}`);
  return kit.read(out, "case-0");
}

const FUNCTION_SHAPES: Shape[] = ["fnJoin", "fnFormat", "fnKeys"];

for (const kit of KITS)
describe(`catalog strings combined by task code on ${kit.name} (property)`, () => {
  it("reach task code exactly as Consul holds them, and land as exactly that text: no live opener, no cdktf token, no broken expression", () => {
    fc.assert(
      fc.property(caseArbitrary(), ({ c, values }) => {
        CaseViews.seen.clear();
        const content = contentOf(c, values, kit);
        const seen = CaseViews.seen.get(0) ?? [];
        if (c.shape === "fnKeys") assert.deepEqual([...seen].sort(), [...values].sort(), "task code saw other tags");
        else assert.deepEqual(seen, values, "task code saw other strings than Consul holds");
        // hclTemplateValue throws on any live `${`/`%{` except constant strings; cdktf tokens would
        // have been resolved (or thrown) during synthesis and show up as a different value.
        const got = FUNCTION_SHAPES.includes(c.shape) ? evalFunction(content) : hclTemplateValue(content);
        const want = c.shape === "fnKeys" ? JSON.stringify([...new Set(values)].sort()) : expectedContent(c, values);
        assert.equal(got, want, `content: ${JSON.stringify(content)}`);
      }),
      {
        numRuns: 500,
        examples: [
          [{ c: { shape: "handlebars", lits: [] }, values: ["$", '{file("/etc/hostname")}'] }],
          [{ c: { shape: "mixed", lits: ["", "{x}"] }, values: ["$"] }],
          [{ c: { shape: "mixed", lits: ["", '${"T"}'] }, values: ["US$"] }],
          [{ c: { shape: "mixed", lits: ["$", ""] }, values: ["{x}"] }],
          [{ c: { shape: "fnJoin", lits: [""] }, values: ["$", "{x}"] }],
          [{ c: { shape: "fnJoin", lits: [","] }, values: ['a"), file("/etc/hostname"), ("', "b"] }],
          [{ c: { shape: "fnFormat", lits: ["-"] }, values: ['q"r', "c\\d", '\\"'] }],
          [{ c: { shape: "keys", lits: [] }, values: ["%", "{ if }"] }],
          // The probe's payloads: a quote in a value task code serialises, a newline in a map key.
          [{ c: { shape: "jsonStringify", lits: [] }, values: ['", "admin": true, "x": "'] }],
          [{ c: { shape: "fnKeys", lits: [] }, values: ["a\nb", "c\u0000d"] }],
          [{ c: { shape: "plus", lits: [] }, values: ["-1.8881545897087626e+289", "${TfToken[TOKEN.1]}"] }],
        ],
      },
    );
  });
});
