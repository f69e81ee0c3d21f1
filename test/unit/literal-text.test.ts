import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { LiteralTable, literalData, mapStrings, templateText } from "../../src/cdktf/literal-text.ts";

describe("literal text in Terraform templates", () => {
  it("writes a lead before `{` one more time, so Terraform reads it as text", () => {
    assert.equal(templateText('${file("x")}', "", ""), '$${file("x")}');
    assert.equal(templateText("%{ if }", "", ""), "%%{ if }");
    assert.equal(templateText("$${x}", "", ""), "$$${x}");
    assert.equal(templateText("a $ b % c {d}", "", ""), "a $ b % c {d}");
  });

  it("keeps a trailing `$` from joining the expression text after it", () => {
    assert.equal(templateText("US$", "", "{x}"), "US$$", "then `{x}`: Terraform reads `US${x}` as text");
    assert.equal(templateText("US$", "", "${aws_instance.x.id}"), 'US${"$"}');
    assert.equal(templateText("a%", "", "%{ if }"), 'a${"%"}');
    assert.equal(templateText("a$", "", "%{ if }"), "a$");
  });

  it("adds a lead when literal `{` follows a lead of the expression text before it", () => {
    assert.equal(templateText("{x}", "say $", ""), "${x}");
    assert.equal(templateText("{x}", "say", ""), "{x}");
  });

  it("escapes quotes, backslashes and control characters inside a quoted string", () => {
    assert.equal(templateText('a"b\\c\nd\te\r\u0000\u007f', "", "", true), 'a\\"b\\\\c\\nd\\te\\r\\u0000\\u007f');
    assert.equal(templateText('a"b\\c\n', "", "", false), 'a"b\\c\n', "template text at the top: JSON escapes them");
  });
});

describe("a synthesis' literal table", () => {
  it("gives each text a placeholder without ASCII, and marking is idempotent", () => {
    const t = new LiteralTable();
    const ph = t.mark('${file("x")}');
    assert.doesNotMatch(ph, /[\x00-\x7f]/);
    assert.equal(t.mark(ph), ph);
    assert.equal(t.mark(`a${ph}b`), t.mark("a") + ph + t.mark("b"));
  });

  it("writes literals by where they land: template text, a quoted string, an expression", () => {
    const t = new LiteralTable();
    const lit = t.mark('x"${y}\n');
    assert.equal(t.write(lit), 'x"$${y}\n');
    assert.equal(t.write(`\${join(",", ["${lit}"])}`), '${join(",", ["x\\"$${y}\\n"])}');
    assert.equal(t.write(`\${aws_instance.${t.mark("web")}.id}`), "${aws_instance.web.id}", "a plain name is allowed in code");
    assert.throws(() => t.write(`\${aws_instance.${t.mark('a"b')}.id}`), { code: "TASK_SYNTH_INVALID" });
  });

  it("expands expression text kept behind a trusted placeholder and escapes the literals inside it", () => {
    const t = new LiteralTable();
    const rendered = t.trusted(`\${upper("${t.mark("$")}")}`);
    assert.equal(t.write(t.mark("a") + rendered + t.mark("{b}")), 'a${upper("$")}{b}');
  });

  it("refuses marker characters that are not a placeholder of this table (data cannot forge one)", () => {
    const t = new LiteralTable();
    const other = new LiteralTable().mark("x");
    assert.throws(() => t.write(`\${${other}}`), { code: "TASK_SYNTH_INVALID" });
    assert.equal(t.write(t.mark(other)), other, "inside a literal, a foreign placeholder is just text");
  });
});

describe("plain data as literal text", () => {
  it("escapes keys and values and keeps other types", () => {
    assert.deepEqual(literalData({ "${k}": ["${v}", 1, true, null] }), { "$${k}": ["$${v}", 1, true, null] });
  });

  it("keeps a __proto__ key from Consul as an own key, not as the copy's prototype", () => {
    const out = literalData(JSON.parse('{"__proto__":{"polluted":"${x}"}}') as Record<string, unknown>);
    assert.deepEqual(Object.keys(out), ["__proto__"]);
    assert.equal(Object.getPrototypeOf(out), Object.prototype);
    assert.equal((Object.getOwnPropertyDescriptor(out, "__proto__")!.value as { polluted: string }).polluted, "$${x}");
  });

  it("walks data nested deeper than the call stack allows", () => {
    let deep: unknown = "${x}";
    for (let i = 0; i < 100_000; i++) deep = { a: deep };
    let out = literalData(deep) as { a: unknown };
    for (let i = 0; i < 100_000; i++) out = out.a as { a: unknown };
    assert.equal(out, "$${x}");
    assert.deepEqual(mapStrings([["a"]], (s) => s.toUpperCase()), [["A"]]);
  });
});
