import { createHmac, timingSafeEqual } from "node:crypto";

/** The header a signed body carries: `sha256=<hex HMAC-SHA256 of the raw body>` (GitHub's form). */
export const SIGNATURE_HEADER = "X-Cts-Signature-256";

/** The header value signing `body` with `secret`. */
export function signBody(body: string | Uint8Array, secret: string): string {
  return `sha256=${createHmac("sha256", secret).update(body).digest("hex")}`;
}

/**
 * Whether `header` (the `X-Cts-Signature-256` value a receiver got) signs the raw `body` with
 * `secret`; compared in constant time. A receiver checks the bytes it read, before parsing them.
 */
export function verifySignature(body: string | Uint8Array, header: string | undefined | null, secret: string): boolean {
  if (typeof header !== "string" || !/^sha256=[0-9a-f]{64}$/.test(header)) return false;
  const want = Buffer.from(signBody(body, secret));
  const got = Buffer.from(header);
  return got.length === want.length && timingSafeEqual(got, want);
}
