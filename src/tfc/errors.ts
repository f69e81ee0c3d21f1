import { CtsError } from "../errors/cts-error.ts";
import { knownSecrets } from "../secrets/redactor.ts";

/** The request an error is about (method and path only: no headers, no body). */
export interface CallSite {
  method: string;
  path: string;
}

const MAX_DETAIL = 300;

/**
 * A failed answer as a catalogued error, chosen by the status class alone: servers implementing
 * the API word (and even shape) their errors differently, so the text is only shown, never matched.
 */
export function answerError(status: number, body: string, contentType: string | undefined, call: CallSite): CtsError {
  const what = `Terraform Cloud answered ${status} to ${call.method} ${call.path}: ${describeBody(body, contentType)}`;
  const options = { detail: { status, method: call.method, path: call.path } };
  const message = (text: string) => knownSecrets.redact(`${what}. ${text}`);
  if (status === 401) return new CtsError("TFC_UNAUTHORIZED", "usage", message("The token was refused: set a valid API token in driver.terraformCloud.token (or TFC_TOKEN)."), options);
  if (status === 403) return new CtsError("TFC_FORBIDDEN", "usage", message("The token may not do this: grant its team the permission in the organization."), options);
  if (status === 404) return new CtsError("TFC_NOT_FOUND", "usage", message("It does not exist or the token may not see it: check the organization and workspace names."), options);
  if (status === 409) return new CtsError("TFC_CONFLICT", "external", message("The workspace or run is in a state that does not allow this (locked, or another run holds it)."), options);
  if (status === 429) return new CtsError("TFC_RATE_LIMITED", "external", message("Still rate limited after waiting as the server asked."), options);
  if (status >= 500) return new CtsError("TFC_SERVER_ERROR", "external", message("The server failed; calls that are safe to repeat were retried."), options);
  if (status >= 400) return new CtsError("TFC_INVALID", "usage", message("The server refused the request as invalid; correct what it names."), options);
  return new CtsError("TFC_BAD_ANSWER", "external", message("cts expected a JSON:API answer; check that the hostname points at Terraform Cloud or Enterprise."), options);
}

/** A network failure (no answer) as a catalogued error. */
export function networkError(err: unknown, call: CallSite, host: string): CtsError {
  const code = (err as NodeJS.ErrnoException)?.code ?? "";
  const reason = knownSecrets.redact(err instanceof Error ? err.message : String(err));
  const options = { cause: err, detail: { method: call.method, path: call.path, errno: code } };
  if (isTlsFailure(code)) {
    return new CtsError("TFC_TLS_FAILED", "external", `TLS with Terraform Cloud at ${host} failed on ${call.method} ${call.path}: ${reason}. Check driver.terraformCloud.tls (caCert, serverName) against the server's certificate.`, options);
  }
  return new CtsError("TFC_UNREACHABLE", "external", `Terraform Cloud at ${host} is unreachable (${call.method} ${call.path}: ${reason}). Check driver.terraformCloud.hostname and the network between cts and it.`, options);
}

/** The call was stopped by its caller's signal. */
export function cancelledError(call: CallSite): CtsError {
  return new CtsError("TFC_CANCELLED", "external", `${call.method} ${call.path} to Terraform Cloud was cancelled.`, { detail: { method: call.method, path: call.path } });
}

/** An answer that is not what the API documents (not JSON, no data). */
export function badAnswer(call: CallSite, why: string): CtsError {
  return new CtsError("TFC_BAD_ANSWER", "external", knownSecrets.redact(`Terraform Cloud's answer to ${call.method} ${call.path} is not usable: ${why}. Check that the hostname points at Terraform Cloud or Enterprise.`), {
    detail: { method: call.method, path: call.path },
  });
}

function isTlsFailure(code: string): boolean {
  return /^(ERR_TLS_|ERR_SSL_|CERT_|UNABLE_TO_(VERIFY|GET)|DEPTH_ZERO_SELF_SIGNED_CERT|SELF_SIGNED_CERT_IN_CHAIN|HOSTNAME_MISMATCH|EPROTO$)/.test(code);
}

/** The error text of a body: JSON:API errors[] titles and details, else a short excerpt of the text. */
function describeBody(body: string, contentType: string | undefined): string {
  if (!body.trim()) return "(no body)";
  if (/json/.test(contentType ?? "") || body.trimStart().startsWith("{")) {
    try {
      const errors = (JSON.parse(body) as { errors?: { title?: string; detail?: string }[] }).errors;
      if (Array.isArray(errors) && errors.length) return clip(errors.map((e) => [e?.title, e?.detail].filter(Boolean).join(": ")).join("; "));
    } catch {
      /* not JSON after all: shown as text below */
    }
  }
  if (/html/.test(contentType ?? "") || /^\s*</.test(body)) return "(an HTML page, as a proxy or load balancer sends)";
  return clip(body.trim().replace(/\s+/g, " "));
}

function clip(text: string): string {
  return text.length > MAX_DETAIL ? `${text.slice(0, MAX_DETAIL)}…` : text;
}
