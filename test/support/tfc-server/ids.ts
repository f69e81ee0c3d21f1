import { randomBytes } from "node:crypto";

const ALPHABET = "abcdefghijkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ123456789";

/** A TFC-style id: the resource's prefix and 16 random base58 characters (`ws-…`, `run-…`). */
export function newId(prefix: string): string {
  const bytes = randomBytes(16);
  let s = "";
  for (const b of bytes) s += ALPHABET[b % ALPHABET.length];
  return `${prefix}-${s}`;
}

/** An unguessable secret for archivist URLs (upload and log links carry no token, like TFC's signed URLs). */
export function newSecret(): string {
  return randomBytes(24).toString("base64url");
}
