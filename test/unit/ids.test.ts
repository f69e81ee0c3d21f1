import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { constructId } from "../../src/task/ids.ts";

describe("constructId", () => {
  it("never maps two different inputs to one id", () => {
    const inputs = [["a.b"], ["ab"], ["a_b"], ["a-b"], ["a", "b"], ["a__b"], ["a_2e_b"], [""], ["_x_"], ["1"], ["a/b"], ["ä"]];
    const ids = inputs.map((p) => constructId(...p));
    assert.equal(new Set(ids).size, ids.length, ids.join(" "));
  });

  it("produces only characters cdktf keeps, never starting with a digit", () => {
    for (const p of ["web.1", "10.0.0.1:80", "${x}", "名前", "9lives"]) {
      const id = constructId(p);
      assert.match(id, /^[A-Za-z_][A-Za-z0-9_-]*$/, id);
    }
  });

  it("keeps readable ids readable", () => {
    assert.equal(constructId("web", "node1"), "web-node1");
  });
});
