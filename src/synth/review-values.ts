import { liveTemplates } from "../cdktf/literal-text.ts";
import { knownSecrets } from "../secrets/redactor.ts";
import { UNPRINTABLE } from "../values/quote.ts";
import { sha256 } from "./stable-json.ts";

/**
 * Values as a review shows them (`cts diff`): one line each, secrets never shown, long values
 * shortened to a recognisable start and a hash (two values with the same hash are the same).
 */

/** What a sensitive value reads. */
export const SENSITIVE = "(sensitive)";

/** A value longer than this (as JSON) is shortened. */
export const LONG_VALUE = 96;
const KEPT = 60;

/**
 * Attribute names that hold credentials in the common providers (`password`, `secret_key`,
 * `token`, `private_key`, …). Without the providers' schemas an offline review cannot know which
 * attributes a provider marks sensitive, so these are never shown; a reference (`${var.token}`) is.
 */
const SENSITIVE_NAME = /(^|_)(password|passwd|passphrase|secret|token|private_key|api_key|access_key|secret_key|credentials?)($|_)/i;

/** Whether the attribute at the end of `path` (`a.b[0].password`) is one a review never shows. */
export function sensitiveName(path: string): boolean {
  const leaf = /([A-Za-z0-9_-]+)(\[\d+\])*$/.exec(path)?.[1] ?? "";
  return SENSITIVE_NAME.test(leaf);
}

/** A value as one line: JSON (strings quoted), registered secrets redacted, long ones shortened with a hash. */
export function shownValue(value: unknown, sensitive = false): string {
  if (sensitive && !onlyReferences(value)) return SENSITIVE;
  const text = knownSecrets.redact(printable(JSON.stringify(value) ?? "null"));
  if (text.length <= LONG_VALUE) return text;
  // The hash is of what is shown (secrets already out), so it cannot be used to guess one.
  return `${text.slice(0, KEPT)}… (${text.length} chars, sha256 ${sha256(text).slice(0, 12)})`;
}

/** A string that is nothing but Terraform expressions (`${var.token}`): no value of its own to hide. */
function onlyReferences(value: unknown): boolean {
  return typeof value === "string" && value !== "" && liveTemplates(value).join("") === value;
}

const UNPRINTABLE_ALL = new RegExp(UNPRINTABLE.source, "gu");

/** JSON text with the characters JSON leaves as they are but a terminal or a page would act on (U+2028, bidi controls) escaped. */
function printable(json: string): string {
  return json.replace(UNPRINTABLE_ALL, (c) => {
    let out = "";
    for (let i = 0; i < c.length; i++) out += `\\u${c.charCodeAt(i).toString(16).padStart(4, "0")}`;
    return out;
  });
}
