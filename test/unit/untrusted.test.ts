import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { decodeForTerraform, encodeData, encodeUntrusted, raw, SENTINEL } from "../../src/synth/untrusted.ts";

describe("untrusted catalog strings", () => {
  const nasty = ['${file("/etc/hostname")}', "%{ if true }x%{ endif }", "${TfToken[TOKEN.1]}", "#{TfToken[TOKEN.2]}", "&{TfToken[TOKEN.3]}", "$${x}", "a" + SENTINEL + "b", SENTINEL + "{", "plain"];

  it("hides every interpolation and token opener from cdktf and Terraform", () => {
    for (const s of nasty) {
      const e = encodeUntrusted(s);
      assert.doesNotMatch(e, /[$%#&]\{/, s);
    }
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

  it("encodes keys and nested values, leaving numbers and booleans alone", () => {
    const out = encodeData({ "${k}": ["${v}", 1, true, null] });
    assert.deepEqual(Object.keys(out), [`$${SENTINEL}{k}`]);
    assert.deepEqual(Object.values(out)[0], [`$${SENTINEL}{v}`, 1, true, null]);
  });

  it("leaves strings without openers untouched (same object identity for speed is not required, equal value is)", () => {
    assert.equal(encodeUntrusted("web-1 10.0.0.1 {ok} $ %"), "web-1 10.0.0.1 {ok} $ %");
  });
});
