import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { canonicalDigest, stableDigest, stableStringify } from "../../src/watch/digest.ts";

describe("watch digests", () => {
  it("gives equal data the same stable digest whatever the key order, and different data another", () => {
    assert.equal(stableDigest({ b: 1, a: [1, 2] }), stableDigest({ a: [1, 2], b: 1 }));
    assert.notEqual(stableDigest({ a: [1, 2] }), stableDigest({ a: [2, 1] }));
  });

  it("digests canonical data by its plain JSON, which the stable digest agrees with on sorted data", () => {
    const sorted = { a: "1", b: { c: "2" } };
    assert.equal(canonicalDigest(sorted), stableDigest(sorted));
    assert.equal(canonicalDigest([]), canonicalDigest([]));
    assert.notEqual(canonicalDigest([]), canonicalDigest({}));
  });

  it("sorts object keys at every depth and keeps array order", () => {
    assert.equal(stableStringify({ b: 1, a: { d: [2, 1], c: null } }), '{"a":{"c":null,"d":[2,1]},"b":1}');
  });
});
