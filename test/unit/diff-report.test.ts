import { describe, it } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import { Lexer, marked, type Token, type Tokens } from "marked";
import { diffSynthesized, nameOf } from "../../src/synth/json-diff.ts";
import { diffMarkdown, diffText, type DiffReport } from "../../src/cli/diff-report.ts";
import { planSections } from "../../src/cli/plan-text.ts";
import { constructId, constructIdParts } from "../../src/task/ids.ts";
import { knownSecrets } from "../../src/secrets/redactor.ts";
import { sha256 } from "../../src/synth/stable-json.ts";

const doc = (resource: object, extra: object = {}) => JSON.stringify({ "//": { metadata: { stack: "t" } }, resource, ...extra });
const meta = (path: string) => ({ "//": { metadata: { path, uniqueId: "x" } } });

describe("cts diff's values: what a reviewer sees of each attribute", () => {
  it("never shows a registered secret, an attribute named like a credential, or a sensitive output; shows a reference", () => {
    knownSecrets.add("s3cr3t-diff-value");
    const a = doc({ db: { main: { password: "old-one", token: "${var.token}", note: "uses s3cr3t-diff-value here" } } });
    const b = doc({ db: { main: { password: "new-one", token: "${var.other}", note: "uses s3cr3t-diff-value there" } } }, { output: { dsn: { value: "postgres://u:p@h", sensitive: true } } });
    const out = JSON.stringify(diffSynthesized(a, b));
    for (const hidden of ["old-one", "new-one", "s3cr3t-diff-value", "postgres://"]) assert.ok(!out.includes(hidden), hidden);
    const [db, output] = diffSynthesized(a, b);
    assert.deepEqual(output!.attributes, [{ path: "sensitive", value: "true" }, { path: "value", value: "(sensitive)" }]);
    assert.deepEqual(db!.changes, [
      { path: "note", before: '"uses [redacted] here"', after: '"uses [redacted] there"' },
      { path: "password", before: "(sensitive)", after: "(sensitive)" },
      { path: "token", before: '"${var.token}"', after: '"${var.other}"' },
    ]);
  });

  it("quotes a map key from the catalog as a path segment, with characters a page would act on escaped", () => {
    const [c] = diffSynthesized(doc({ f: { x: { tags: {} } } }), doc({ f: { x: { tags: { "a.b\u2028c": "v\u202e" } } } }));
    assert.deepEqual(c!.changes, [{ path: 'tags["a.b\\u2028c"]', after: '"v\\u202e"' }]);
  });

  it("shortens a long value to its start, its length and a hash, so equal values read equal", () => {
    const cert = `-----BEGIN CERTIFICATE-----${"A".repeat(400)}`;
    const [c] = diffSynthesized(doc({ f: { x: { content: "short" } } }), doc({ f: { x: { content: cert } } }));
    const shown = JSON.stringify(cert);
    assert.equal(c!.changes![0]!.after, `${shown.slice(0, 60)}… (${shown.length} chars, sha256 ${sha256(shown).slice(0, 12)})`);
  });

  it("names a block as the task did: its construct path under the task, constructId parts decoded", () => {
    assert.equal(nameOf("aws_rule.web-web_2d_1", "fw/web-web_2d_1"), "web-web-1");
    assert.equal(nameOf("aws_rule.allow_web-web_2d_1_1A2B3C4D", "fw/allow/web-web_2d_1"), "allow/web-web-1");
    assert.equal(nameOf("local_file.list", "fw/list"), undefined, "the address says it already");
    assert.equal(nameOf("local_file.my_2d_x", "fw/my_2d_x"), "my-x");
    assert.equal(nameOf("local_file.other", "fw/a_5f_b"), "a_5f_b", "constructId never escapes _ that way: not its encoding");
    const [c] = diffSynthesized(undefined, doc({ aws_rule: { "web-web_2d_1": { ...meta("fw/web-web_2d_1"), from_port: 443 } } }));
    assert.deepEqual(c, { address: "aws_rule.web-web_2d_1", name: "web-web-1", action: "add", attributes: [{ path: "from_port", value: "443" }] });
  });

  it("constructIdParts reads back every constructId", () => {
    fc.assert(
      fc.property(fc.array(fc.string({ unit: "grapheme", maxLength: 8 }), { minLength: 1, maxLength: 3 }), (parts) => {
        const decoded = constructIdParts(constructId(...parts));
        const plain = parts.every((p, i) => p !== "" && /^[A-Za-z0-9]*$/.test(p) && !(i === 0 && /^[0-9]/.test(p)));
        assert.deepEqual(decoded, plain ? undefined : parts);
      }),
    );
  });

  it("cuts tofu show's plan text into one section per resource", () => {
    const output = [
      "OpenTofu will perform the following actions:",
      "",
      '  # aws_rule.a["x y"] will be updated in-place',
      '  ~ resource "aws_rule" "a" {',
      "      ~ from_port = 443 -> 8443",
      "    }",
      "",
      "  # aws_rule.a will be created",
      '  + resource "aws_rule" "a" {',
      '      + cidr_ipv4 = "0.0.0.0/0"',
      "    }",
      "",
      "Plan: 1 to add, 1 to change, 0 to destroy.",
    ].join("\n");
    const s = planSections(output, ["aws_rule.a", 'aws_rule.a["x y"]']);
    assert.deepEqual(s.get('aws_rule.a["x y"]'), ['# aws_rule.a["x y"] will be updated in-place', '~ resource "aws_rule" "a" {', "    ~ from_port = 443 -> 8443", "  }"]);
    assert.deepEqual(s.get("aws_rule.a"), ["# aws_rule.a will be created", '+ resource "aws_rule" "a" {', '    + cidr_ipv4 = "0.0.0.0/0"', "  }"]);
  });
});

/** Catalog text that would end a code block, open HTML, or close the details element if it escaped its code block. */
const HOSTILE = "```\n</details><img src=x onerror=alert(1)> [link](https://example.com) | cell";

const report: DiffReport = {
  base: "origin/main",
  snapshot: "snapshot.json",
  tasks: [
    { task: "quiet", status: "unchanged", changes: [] },
    {
      task: "firewall",
      status: "changed",
      changes: diffSynthesized(
        doc({ aws_rule: { "web-web_2d_1": { ...meta("firewall/web-web_2d_1"), from_port: 443, description: "web" }, old: { ...meta("firewall/old"), cidr_ipv4: "10.0.0.3/32" } } }),
        doc({ aws_rule: { "web-web_2d_1": { ...meta("firewall/web-web_2d_1"), from_port: 8443, description: HOSTILE }, debug: { ...meta("firewall/debug"), cidr_ipv4: "0.0.0.0/0" } } }),
      ),
      plan: {
        add: 1,
        change: 1,
        destroy: 1,
        resources: [{ address: "aws_rule.web-web_2d_1", action: "update", lines: ["# aws_rule.web-web_2d_1 will be updated in-place", '~ resource "aws_rule" "web-web_2d_1" {', "    ~ from_port = 443 -> 8443", "  }"] }],
      },
    },
  ],
};

describe("cts diff's Markdown, rendered as a pull request comment would be", () => {
  const md = diffMarkdown(report);
  const tokens = new Lexer({ gfm: true }).lex(md);
  const html = marked.parse(md, { gfm: true, async: false }) as string;
  const code = tokens.filter((t): t is Tokens.Code => t.type === "code");

  it("is a heading, a table of every task, and per changed task an open details element with diff code blocks", () => {
    const kinds = tokens.filter((t) => t.type !== "space").map((t: Token) => t.type);
    assert.deepEqual(kinds.slice(0, 2), ["heading", "table"]);
    const heading = tokens[0] as Tokens.Heading;
    assert.equal(heading.depth, 3);
    assert.equal(heading.text, "cts diff: `origin/main` → working tree");
    const table = tokens.find((t): t is Tokens.Table => t.type === "table")!;
    assert.deepEqual(table.header.map((h) => h.text), ["Task", "Status", "Add", "Change", "Remove"]);
    assert.deepEqual(table.rows.map((r) => r.map((c) => c.text)), [["`quiet`", "unchanged", "0", "0", "0"], ["`firewall`", "changed", "1", "1", "1"]]);
    assert.match(html, /<details open><summary><code>firewall<\/code>: changed: 1 to add, 1 to change, 1 to remove<\/summary>/);
    assert.equal((html.match(/<details/g) ?? []).length, 1, "an unchanged task has no section");
    assert.equal((html.match(/<\/details>/g) ?? []).length, 1);
    assert.deepEqual(code.map((c) => c.lang), ["diff", "diff"]);
  });

  it("shows each block by the task's name and address, an added open CIDR with its value, a change as old → new, a removal", () => {
    const lines = code[0]!.text.split("\n");
    // An added or removed block's attributes carry its sign: GitHub colours the whole block.
    assert.deepEqual(lines.slice(0, 2), ["+ aws_rule.debug", '+   cidr_ipv4: "0.0.0.0/0"']);
    assert.deepEqual(lines.slice(2, 4), ["- aws_rule.old", '-   cidr_ipv4: "10.0.0.3/32"']);
    assert.equal(lines[4], "~ web-web-1 (aws_rule.web-web_2d_1)");
    assert.ok(lines.includes("    from_port: 443 → 8443"));
  });

  it("keeps catalog text inside its code block: no HTML, link or table cell comes out of it", () => {
    assert.ok(code[0]!.text.includes("</details><img src=x onerror=alert(1)>"), "the text is shown as it is");
    assert.ok(!/<img/.test(html), "no img element");
    assert.ok(!/<a /.test(html), "no link");
    assert.match(html, /&lt;img src=x onerror=alert\(1\)&gt;/);
    assert.match(code[0]!.raw, /^````diff\n/, "a fence longer than the data's backticks");
  });

  it("shows Terraform's plan of each resource with its action symbol first, as a diff block colours it", () => {
    assert.deepEqual(code[1]!.text.split("\n"), ["# aws_rule.web-web_2d_1 will be updated in-place", '~ resource "aws_rule" "web-web_2d_1" {', "~     from_port = 443 -> 8443", "  }"]);
    assert.match(md, /Terraform's plan against the task's state: 1 to add, 1 to change, 1 to destroy:/);
  });

  it("writes a task name into HTML escaped", () => {
    assert.match(diffMarkdown({ base: "HEAD", tasks: [{ task: "a&b", status: "added", changes: [] }] }), /<summary><code>a&amp;b<\/code>: added:/);
  });

  it("says so in one line when nothing changes; the text form lists the same values", () => {
    assert.equal(diffMarkdown({ base: "HEAD", tasks: [{ task: "quiet", status: "unchanged", changes: [] }] }), "### cts diff: `HEAD` → working tree\n\nNo task's Terraform changes (1 compared).\n");
    const text = diffText({ ...report, head: "feature" });
    assert.match(text, /^Comparing origin\/main with feature over snapshot\.json\.$/m);
    assert.match(text, /^ {2}~ web-web-1 \(aws_rule\.web-web_2d_1\)\n {6}description: "web" → "```\\n<\/details>/m);
    assert.match(text, /^ {4}~ aws_rule\.web-web_2d_1 \(update\)\n {6}# aws_rule\.web-web_2d_1 will be updated in-place$/m);
  });
});
