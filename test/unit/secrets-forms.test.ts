import { describe, it } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import { REDACTED, Redactor } from "../../src/secrets/redactor.ts";
import { createLogger, redactSecret } from "../../src/log/logger.ts";
import { encodings, goJson, secretArbitrary } from "../fixtures/secret-encodings.ts";

/** Text around a secret: ordinary words or generated characters. */
const around = fc.oneof(fc.constantFrom("", " ", "key=", 'error: "', "/v1/kv/", "Bearer "), fc.string({ maxLength: 6 }));

/** The encodings of `secret` that `text` still contains. */
function leaks(text: string, secret: string): string[] {
  return Object.entries(encodings(secret))
    .filter(([, form]) => text.includes(form))
    .map(([name]) => name);
}

/** Every string of a parsed JSON value, keys included. */
function stringsOf(v: unknown): string[] {
  if (typeof v === "string") return [v];
  if (Array.isArray(v)) return v.flatMap(stringsOf);
  if (v && typeof v === "object") return Object.entries(v).flatMap(([k, x]) => [k, ...stringsOf(x)]);
  return [];
}

const runs = { numRuns: 300 };

describe("the redactor matches a secret in every spelling it is printed in (property)", () => {
  it("raw, JSON.stringify, Go's encoding/json (\\u003c \\u0026 \\u003e \\u2028), \\uXXXX in either case, Go %q, HCL, URL and form encoding, JSON in JSON", () => {
    fc.assert(
      fc.property(secretArbitrary(), around, around, (secret, before, after) => {
        const r = new Redactor();
        r.add(secret);
        for (const [name, form] of Object.entries(encodings(secret))) {
          const out = r.redact(before + form + after);
          assert.deepEqual(leaks(out, secret), [], `${name} form ${JSON.stringify(form)} in ${JSON.stringify(out)}`);
          assert.ok(out.includes(REDACTED), `${name}: ${JSON.stringify(out)}`);
        }
      }),
      runs,
    );
  });

  it("keeps a JSON document valid and free of the secret (JSON.stringify and Go's encoder)", () => {
    fc.assert(
      fc.property(secretArbitrary(), around, around, (secret, before, after) => {
        const r = new Redactor();
        r.add(secret);
        const text = before + secret + after;
        for (const doc of [JSON.stringify({ message: text, n: 1 }), `{"message":"${goJson(text)}","n":1}`]) {
          const parsed = JSON.parse(r.redact(doc)) as { message: string; n: number };
          assert.equal(parsed.n, 1);
          assert.ok(!parsed.message.includes(secret), JSON.stringify(parsed.message));
        }
      }),
      runs,
    );
  });

  it("redacts every secret of several, overlapping ones included", () => {
    fc.assert(
      fc.property(fc.array(secretArbitrary(), { minLength: 2, maxLength: 3 }), (secrets) => {
        const r = new Redactor();
        for (const s of secrets) r.add(s);
        const out = r.redact(secrets.join("|") + secrets[0]!.slice(0, 3) + secrets[1]!);
        for (const s of secrets) assert.deepEqual(leaks(out, s), [], JSON.stringify(out));
      }),
      runs,
    );
  });
});

describe("the redactor's forms", () => {
  it("leaves the escape of the next character alone when a secret ends in a backslash (JSON stays valid)", () => {
    // Found by the property above: `\\` (the secret's backslash) + `\"` (a quote after it); a run of
    // any length took the third backslash, and the document no longer parsed.
    const secret = '"""\u0000a\\';
    const r = new Redactor();
    r.add(secret);
    for (const after of ['"', '"x', '" and more']) {
      const redacted = r.redact(JSON.stringify({ message: secret + after, n: 1 }));
      assert.deepEqual(JSON.parse(redacted), { message: `[redacted]${after}`, n: 1 });
    }
    // …and still takes the whole of a `\u005c` spelling of that backslash, escaped or not.
    const r2 = new Redactor();
    r2.add("abcdef\\");
    for (const form of ["abcdef\\u005c", "abcdef\\u005C", "abcdef\\\\u005c", "abcdef%5C"]) assert.equal(r2.redact(`x ${form} y`), "x [redacted] y", form);
  });

  it("masks each line of a multi-line secret, as Terraform prints it in a heredoc", () => {
    const r = new Redactor();
    r.add("first-line\nsecond-line");
    assert.equal(r.redact("  content = <<-EOT\n      first-line\n      second-line\n  EOT"), `  content = <<-EOT\n      ${REDACTED}\n      ${REDACTED}\n  EOT`);
  });

  it("masks the base64 of a secret at any offset (HTTP basic auth in a provider's debug log)", () => {
    const r = new Redactor();
    r.add("correct-horse-battery");
    for (const user of ["", "a", "ab", "admin"]) {
      const header = `Authorization: Basic ${Buffer.from(`${user}:correct-horse-battery`).toString("base64")}`;
      const out = r.redact(header);
      assert.ok(out.includes(REDACTED), out);
      assert.ok(!Buffer.from(out.slice("Authorization: Basic ".length), "base64").toString("latin1").includes("horse-batt"), out);
    }
  });

  it("stays linear on a long run of backslashes (catalog data cannot stall the log)", () => {
    const r = new Redactor();
    r.add('\\\\\\\\\\\\"quoted\\\\\\\\');
    r.add("plain-secret");
    // A pattern that backtracks would take minutes here; one that does not takes milliseconds.
    const text = "\\".repeat(50_000) + "x";
    assert.equal(r.redact(text), text);
  });

  it("leaves text without a secret untouched, and a secret shorter than the minimum unregistered", () => {
    const r = new Redactor();
    r.add("abc");
    assert.equal(r.size, 0);
    r.add("abcd");
    assert.equal(r.redact("no match here: abc"), "no match here: abc");
    assert.deepEqual(r.values(), ["abcd"]);
  });
});

describe("log lines (property)", () => {
  for (const json of [false, true]) {
    it(`never carry a registered secret in ${json ? "--log-format json" : "text"} lines, in any spelling, whatever the message or fields hold`, () => {
      fc.assert(
        fc.property(secretArbitrary(), around, (secret, before) => {
          redactSecret(secret);
          const lines: string[] = [];
          const log = createLogger({ json, level: "trace", write: (l) => lines.push(l) }, "driver");
          const forms = Object.values(encodings(secret));
          log.debug(`provider: ${before}${forms.join(" ")}`, { output: forms.join("\n"), nested: { value: before + secret } });
          log.info(before + secret);
          for (const line of lines) {
            assert.deepEqual(leaks(line, secret), [], line);
            if (json) assert.ok(!stringsOf(JSON.parse(line)).some((x) => x.includes(secret)), line);
          }
        }),
        { numRuns: 100 },
      );
    });
  }
});

describe("a secret's last character", () => {
  it("is redacted in its longest spelling: a trailing % takes its %25, an emoji its URL bytes", async () => {
    const { Redactor } = await import("../../src/secrets/redactor.ts");
    for (const value of ["zzzza%", "zzzz🚀", "zzzz%🚀%"]) {
      const r = new Redactor();
      r.add(value);
      assert.equal(r.redact(`x ${encodeURIComponent(value)} y`), "x [redacted] y", value);
    }
  });
});
