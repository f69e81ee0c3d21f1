import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { BSLASH, decodeForTerraform, encodeData, encodeUntrusted, ESC, MARK, QUOTE, raw, untrusted } from "../../src/synth/untrusted.ts";

describe("untrusted catalog strings", () => {
  const nasty = ['${file("/etc/hostname")}', "%{ if true }x%{ endif }", "${TfToken[TOKEN.1]}", "#{TfToken[TOKEN.2]}", "&{TfToken[TOKEN.3]}", "$${x}", "a" + MARK + "b", MARK + "{", ESC + MARK, "$", "{x}", "plain"];

  it("hides every interpolation and token opener from cdktf and Terraform", () => {
    for (const s of nasty) assert.doesNotMatch(encodeUntrusted(s), /[$%#&]\{/, s);
  });

  it("round-trips to the exact original with raw()", () => {
    for (const s of nasty) assert.equal(raw(encodeUntrusted(s)), s);
  });

  it("decodes to Terraform's literal escapes", () => {
    assert.equal(decodeForTerraform(encodeUntrusted('${file("x")}')), '$${file("x")}');
    assert.equal(decodeForTerraform(encodeUntrusted("%{ if }")), "%%{ if }");
    assert.equal(decodeForTerraform(encodeUntrusted("#{TfToken[TOKEN.2]}")), "#{TfToken[TOKEN.2]}");
    assert.equal(decodeForTerraform(encodeUntrusted("$${x}")), "$$${x}");
  });

  it("keeps a `$` ending one value and a `{` starting the next apart", () => {
    const joined = encodeUntrusted("$") + encodeUntrusted('{file("/etc/hostname")}');
    assert.doesNotMatch(joined, /\$\{/);
    assert.equal(decodeForTerraform(joined), '$${file("/etc/hostname")}');
    assert.equal(raw(joined), '${file("/etc/hostname")}');
  });

  it("escapes a value's trailing `$` before the task's own `{`, and the task's `$` before a value's `{`", () => {
    assert.equal(decodeForTerraform(encodeUntrusted("a$") + "{b}"), "a$${b}");
    assert.equal(decodeForTerraform("$$" + encodeUntrusted("{b}")), "$$${b}");
  });

  it("leaves the task's own interpolation live after a value ending in `$`", () => {
    assert.equal(decodeForTerraform(encodeUntrusted("US$") + "${aws_instance.x.id}"), 'US${"$"}${aws_instance.x.id}');
    assert.equal(decodeForTerraform(encodeUntrusted("US$") + "$${literal}"), "US$$${literal}");
  });

  it("escapes a literal marker so data cannot forge one", () => {
    const forged = encodeUntrusted("$" + MARK) + "{x}";
    assert.equal(decodeForTerraform(forged), "$" + MARK + "{x}");
  });

  it("re-marks pieces cut from raw text with untrusted()", () => {
    const pieces = raw(encodeUntrusted("a$,{b}")).split(",").map(untrusted);
    assert.equal(decodeForTerraform(pieces.join("")), "a$${b}");
  });

  it("re-marks JSON parsed from a raw catalog value with untrusted()", () => {
    const kv = encodeUntrusted('{"a$":"{x}"}');
    assert.throws(() => JSON.parse(kv));
    const parsed = untrusted(JSON.parse(raw(kv)) as Record<string, string>);
    const [k, v] = Object.entries(parsed)[0]!;
    assert.equal(decodeForTerraform(k + v), "a$${x}");
  });

  it("encodes keys and nested values, leaving numbers and booleans alone", () => {
    const out = encodeData({ "${k}": ["${v}", 1, true, null] });
    assert.deepEqual(Object.keys(out), [`$${MARK}{k}`]);
    assert.deepEqual(Object.values(out)[0], [`$${MARK}{v}`, 1, true, null]);
  });

  it("keeps a __proto__ key from Consul as an encoded own key, not as the copy's prototype", () => {
    const out = encodeData(JSON.parse('{"__proto__":{"polluted":"${x}"}}') as Record<string, unknown>);
    assert.deepEqual(Object.keys(out), ["__proto__"]);
    assert.equal(Object.getPrototypeOf(out), Object.prototype);
    assert.equal((Object.getOwnPropertyDescriptor(out, "__proto__")!.value as { polluted: string }).polluted, `$${MARK}{x}`);
  });

  it("leaves strings without openers at their edges untouched", () => {
    assert.equal(encodeUntrusted("web-1 10.0.0.1 {ok} $ % x"), "web-1 10.0.0.1 {ok} $ % x");
  });

  it("carries data quotes and backslashes as private characters, written back as HCL escapes inside an expression's string", () => {
    const v = encodeUntrusted('a"), file("/x'+'\\');
    assert.ok(!v.includes('"') && !v.includes("\\"), "cdktf never sees a data quote or backslash");
    assert.equal(raw(v), 'a"), file("/x\\');
    assert.equal(decodeForTerraform(`x=${v}`), 'x=a"), file("/x\\', "template text: the characters as they are");
    assert.equal(decodeForTerraform(`\${join(",", ["${v}"])}`), '${join(",", ["a\\"), file(\\"/x\\\\"])}', "inside a string literal: escaped");
    assert.throws(() => decodeForTerraform("${" + QUOTE + "}"), /TASK_SYNTH_INVALID|outside a string/);
    assert.equal(encodeUntrusted(QUOTE + BSLASH), ESC + QUOTE + ESC + BSLASH, "data cannot forge them");
  });
});
