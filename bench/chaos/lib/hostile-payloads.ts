/**
 * The catalog payloads of the hostile-catalog scenario: what the fault probe of issue #23 threw at
 * cts (Terraform and cdktf injection, JSON break-outs, quotes, control characters, `<>&`, U+2028,
 * long strings) plus seeded generated ones, as service instances; and the exact bytes each way of
 * HostileFiles (bench/chaos/tasks.ts) must write for what Consul holds.
 */
import fc from "fast-check";
import { catalogString } from "../../../test/fixtures/untrusted-arbitraries.ts";
import { UNPRINTABLE } from "../../../src/values/quote.ts";
import type { HOSTILE_WAYS } from "../tasks.ts";

/** Prefix of every hostile service name (the tasks' regexp is `^hostile-`). */
export const PREFIX = "hostile-";

/** One service instance to register: its meta `v` and tags carry the payload, and its name when Consul can serve it. */
export interface HostileInstance {
  id: string;
  name: string;
  v: string;
  tags: string[];
  /** "known" (from the probe) or "generated". */
  origin: "known" | "generated";
}

/** Consul refuses meta values over 512 bytes; tags have no limit. */
const META_MAX_BYTES = 512;
const LONG_TAG_BYTES = 8 * 1024;
/** Service names the generated instances are spread over. */
const GENERATED_NAMES = 8;

/** Cuts `s` to at most `bytes` UTF-8 bytes, on a code point boundary. */
function fit(s: string, bytes: number): string {
  let out = "";
  for (const ch of s) {
    if (Buffer.byteLength(out + ch) > bytes) break;
    out += ch;
  }
  return out;
}

const repeatTo = (chunk: string, bytes: number) => fit(chunk.repeat(Math.ceil(bytes / Buffer.byteLength(chunk)) + 1), bytes);

/** The probe's payloads; `canary` is a file a live `${file()}` would read (its content never appears in them). */
export function knownPayloads(canary: string): string[] {
  return [
    '${file("/etc/hostname")}',
    `\${file(${JSON.stringify(canary)})}`,
    `%{ if true }\${file(${JSON.stringify(canary)})}%{ endif }`,
    '%{ for x in ["a", "b"] }${x}%{ endfor }',
    "${path.cwd} ${path.module} ${terraform.workspace}",
    '$${escaped} %%{escaped} $$${file("/etc/hostname")} $$$${x}',
    "${TfToken[TOKEN.1]}",
    "#{TfToken[TOKEN.2]}",
    "&{TfToken[TOKEN.3]}",
    "-1.8881545897087626e+289",
    "${TfToken[TOKEN.1]}-1.8881545897087626e+289#{TfToken[TOKEN.2]}&{TfToken[TOKEN.3]}",
    '", "admin": true, "x": "',
    '"}, "admin": {"x": "',
    '"), file("/etc/hostname"), ("',
    'quote " backslash \\ both \\" escaped-looking \\n \\u0041',
    "new\nline",
    "carriage\rreturn ${x}",
    "crlf\r\n%{ if true }x%{ endif }",
    "nul\u0000byte",
    "tab\there",
    "<script>alert(1)</script> & <b>&amp;</b>",
    "line\u2028separator\u2029paragraph",
    '{{ env "HOME" }} {{json v}} {{{raw}}}',
    "\uE000\uE001\uE002\uE010 placeholder characters",
    "ü 名前 🚀 \ufeff\u200b",
    // Not in Unicode NFC (a decomposed é, a compatibility ideograph, the Ångström sign): Terraform normalizes these.
    "e\u0301 \uFA5B \u212B",
    "$",
    "%",
    "${",
    "%{",
  ];
}

/**
 * The instances: one per known payload (meta `v`, tags, and the name when Consul can serve it),
 * two long ones (a 512-byte meta value, 8 KiB tags), and `generated` from the seed (meta `v` and
 * up to 3 tags each, spread over a few service names).
 */
export function hostileInstances(canary: string, generated: number, seed: number): HostileInstance[] {
  const out: HostileInstance[] = [];
  const add = (origin: HostileInstance["origin"], v: string, tags: string[], nameful = true) => {
    const i = out.length;
    const servable = nameful && !UNPRINTABLE.test(v) && v.length > 0 && v.length <= 200;
    // Generated instances share a few names: one blocking query per name, and Consul allows a
    // client 200 connections (http_max_conns_per_client).
    const name = origin === "generated" ? `${PREFIX}gen-${i % GENERATED_NAMES}` : `${PREFIX}${i}${servable ? `-${v}` : ""}`;
    out.push({ id: `h-${i}`, name, v, tags, origin });
  };
  for (const p of knownPayloads(canary)) add("known", p, [p, `tag ${p}`]);
  const chunk = `\${file("/etc/hostname")}"\\\n<&>%{ if true }\u2028 `;
  add("known", repeatTo(chunk, META_MAX_BYTES), [repeatTo(chunk, LONG_TAG_BYTES), "short"], false);
  add("known", repeatTo("ü名🚀\"\\", META_MAX_BYTES), [repeatTo("${TfToken[TOKEN.1]}\r\n", LONG_TAG_BYTES)], false);
  const sample = fc.sample(fc.record({ v: catalogString({ nonEmpty: true }), tags: fc.uniqueArray(catalogString({ nonEmpty: true }), { maxLength: 3 }) }), { numRuns: generated, seed });
  for (const g of sample) add("generated", fit(g.v, META_MAX_BYTES), g.tags);
  return out;
}

/**
 * Names Consul registers but refuses to serve (HTTP 400 on their health): a newline, NUL, tab
 * and U+2028 in the name. Under the tasks' prefix, so the regexp matches them.
 */
export const ODD_NAMES = [`${PREFIX}odd\nline`, `${PREFIX}odd\u0000nul`, `${PREFIX}odd\ttab`, `${PREFIX}odd\u2028ls`];

/** What Consul holds for an instance (from /v1/agent/services): the truth every file is compared with. */
export interface Held {
  id: string;
  name: string;
  v: string;
  /** In cts's order (sorted by UTF-16 code units, as src/consul/convert.ts sorts them). */
  tags: string[];
}

const cmp = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
/** Go sorts map keys by their UTF-8 bytes (Terraform's jsonencode of an object). */
const byUtf8 = (a: string, b: string) => Buffer.compare(Buffer.from(a), Buffer.from(b));
/** A JSON string as Go's encoding/json writes it (Terraform's jsonencode): `<>&` and U+2028/2029 escaped. */
const goString = (s: string) => JSON.stringify(s).replace(/[<>&\u2028\u2029]/g, (ch) => `\\u${ch.charCodeAt(0).toString(16).padStart(4, "0")}`);

/** The instance as cts hands it to task code. */
export function held(svc: { ID: string; Service: string; Meta?: Record<string, string> | null; Tags?: string[] | null }): Held {
  return { id: svc.ID, name: svc.Service, v: svc.Meta?.v ?? "", tags: [...(svc.Tags ?? [])].sort(cmp) };
}

/**
 * `h` as OpenTofu holds it: every string in Unicode NFC (cty normalizes all strings; measured: a
 * tag with U+FA5B lands as U+8005). Tags keep cts's order, which was decided before.
 */
export function nfcHeld(h: Held): Held {
  return { id: h.id, name: h.name.normalize("NFC"), v: h.v.normalize("NFC"), tags: h.tags.map((t) => t.normalize("NFC")) };
}

/** The exact content each way of HostileFiles must write for `h`. */
export function expectedContent(way: (typeof HOSTILE_WAYS)[number], h: Held): string {
  switch (way) {
    case "plain":
      return h.v;
    case "json":
      return JSON.stringify({ name: h.name, v: h.v, tags: h.tags });
    case "keys":
      return `{${[...new Set(h.tags)].sort(byUtf8).map((t) => `${goString(t)}:${goString(h.v)}`).join(",")}}`;
    case "join":
      return [h.name, h.v, ...h.tags].join("|");
    case "template":
      return `name=${JSON.stringify(h.name)} v=${JSON.stringify(h.v)} tags=${JSON.stringify(h.tags)}`;
  }
}
