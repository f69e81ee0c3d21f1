import { CtsError } from "../errors/cts-error.ts";
import { quote, UNPRINTABLE } from "../values/quote.ts";

/** What a failed Consul call was doing, for error messages that teach. */
export interface CallDescription {
  /** e.g. "reading the health of service 'web'". */
  what: string;
  /** The ACL permission the call needs, e.g. `service:read on "web"`. */
  permission: string;
  /** Consul's base URL (never carries the token). */
  url: string;
}

/** An AbortError like fetch's, so callers can tell cancellation from failure. */
export function abortError(signal?: AbortSignal): Error {
  const reason: unknown = signal?.reason;
  if (reason instanceof Error && reason.name === "AbortError") return reason;
  const err = new Error("The Consul request was aborted.");
  err.name = "AbortError";
  return err;
}

/** True when an error means "cancelled on purpose", not "Consul failed". */
export function isAbortError(err: unknown): boolean {
  return err instanceof Error && (err.name === "AbortError" || (err as { isAbort?: boolean }).isAbort === true);
}

/** True when the error is a Consul answer that retrying will not fix (4xx other than 429, a bad filter). */
export function isFatalConsulError(err: unknown): boolean {
  if (!(err instanceof CtsError)) return false;
  if (err.code === "CONSUL_BAD_REQUEST") return true;
  const status = err.detail.status;
  return typeof status === "number" && status >= 400 && status < 500 && status !== 429;
}

/**
 * The error for "Consul cannot serve this service's health", when `err` is that. Consul's HTTP
 * server answers 400 with an empty body to any URL path holding a character Go's
 * `unicode.IsPrint` refuses (go-cleanhttp's PrintablePathCheckHandler), while its catalog accepts
 * such names at registration. So: a 400 with an empty body (every 400 of Consul's own handlers
 * carries a reason, a bad filter's included) to a health read of a name holding such a
 * character. Anything else: undefined.
 */
export function refusedServiceName(err: unknown, service: string): CtsError | undefined {
  if (!(err instanceof CtsError) || err.detail.status !== 400 || err.detail.reply !== undefined || !UNPRINTABLE.test(service)) return undefined;
  return new CtsError(
    "CONSUL_BAD_REQUEST",
    "usage",
    `Consul cannot serve the health of service ${quote(service)} (HTTP 400 without a reason): its HTTP API refuses URL paths with characters that are not printable, and this name has one. Rename the service in Consul, or set disable_http_unprintable_char_filter = true on the Consul agents.`,
    { cause: err, detail: { ...err.detail, refusedName: true } },
  );
}

/** True for the error of refusedServiceName: the service is left out, the others still read. */
export function isRefusedServiceName(err: unknown): err is CtsError {
  return err instanceof CtsError && err.detail.refusedName === true;
}

/**
 * Turns whatever the HTTP layer threw into a CtsError with `detail.status` for HTTP answers. The
 * token never appears: messages are built from the call description and Consul's reply only.
 */
export function toConsulError(err: unknown, call: CallDescription): CtsError {
  if (err instanceof CtsError) return err;
  const e = err as { statusCode?: unknown; response?: { statusCode?: number; body?: unknown }; code?: string; isTimeout?: boolean; message?: string };
  const status = typeof e?.response?.statusCode === "number" ? e.response.statusCode : undefined;
  if (status !== undefined) {
    const reply = replyText(e.response?.body);
    const said = reply ? ` Consul said: ${reply}${/[.!?]$/.test(reply) ? "" : "."}` : "";
    const detail = { status, url: call.url, ...(reply ? { reply } : {}) };
    // Consul itself answers 403 to a bad token; a 401 comes from HTTP basic auth (a proxy in front of it).
    if (status === 401) {
      return new CtsError(
        "CONSUL_AUTH_FAILED",
        "external",
        `${call.url} refused ${call.what} with HTTP 401 (basic auth credentials missing or wrong). Set the user name and password the proxy in front of Consul expects in consul.auth (auth { username, password } in a CTS config) or CONSUL_HTTP_AUTH=user:pass.`,
        { cause: err, detail },
      );
    }
    if (status === 403) {
      return new CtsError(
        "CONSUL_PERMISSION_DENIED",
        "external",
        `Consul denied ${call.what} (HTTP ${status}).${said} The token probably lacks ${call.permission}: grant it in the token's ACL policy, or set the right token in consul.token / CONSUL_HTTP_TOKEN.`,
        { cause: err, detail },
      );
    }
    // Consul answers an unparsable filter with a 500, but no retry will ever fix it.
    if (status === 400 || (status === 500 && reply !== undefined && /boolean expression evaluator|filter/i.test(reply))) {
      return new CtsError(
        "CONSUL_BAD_REQUEST",
        "usage",
        `Consul rejected ${call.what} as invalid (HTTP ${status}).${said} Check the condition's filter, datacenter and namespace.`,
        { cause: err, detail },
      );
    }
    if (status === 429) {
      return new CtsError("CONSUL_RATE_LIMITED", "external", `Consul rate-limited ${call.what} (HTTP 429). cts will retry with backoff.`, {
        cause: err,
        detail,
      });
    }
    return new CtsError(
      "CONSUL_HTTP_ERROR",
      "external",
      `Consul answered HTTP ${status} to ${call.what}.${said} ${status >= 500 ? "cts will retry; check the Consul servers' health if this persists." : "Check the condition's datacenter and namespace."}`,
      { cause: err, detail },
    );
  }
  if (e?.isTimeout) {
    return new CtsError(
      "CONSUL_TIMEOUT",
      "external",
      `Consul at ${call.url} did not answer ${call.what} in time. cts will retry; check the network path to Consul.`,
      { cause: err, detail: { url: call.url } },
    );
  }
  const code = typeof e?.code === "string" ? e.code : undefined;
  const tls = code ? TLS_PROBLEMS[code] : undefined;
  if (tls) {
    return new CtsError("CONSUL_TLS_FAILED", "external", `TLS with Consul at ${call.url} failed while ${call.what}: ${tls} cts keeps retrying.`, {
      cause: err,
      detail: { url: call.url, errno: code },
    });
  }
  return new CtsError(
    "CONSUL_UNREACHABLE",
    "external",
    `Cannot reach Consul at ${call.url} while ${call.what}: ${code ?? e?.message ?? String(err)}${code === "ECONNRESET" && call.url.startsWith("https:") ? " (an agent with verify_incoming resets connections without a client certificate: set consul.tls.certFile/keyFile or CONSUL_CLIENT_CERT/CONSUL_CLIENT_KEY)" : ""}. Check consul.address (or CONSUL_HTTP_ADDR), TLS settings, and that the agent is running; cts keeps retrying.`,
    { cause: err, detail: { url: call.url, ...(code ? { errno: code } : {}) } },
  );
}

// Node's TLS error codes, in words, with the setting that fixes each.
const UNTRUSTED = "the agent's certificate is not signed by a CA cts trusts. Set consul.tls.caFile (or CONSUL_CACERT) to the CA that signed it, or put it in the directory consul.tls.caPath (CONSUL_CAPATH).";
const TLS_PROBLEMS: Record<string, string> = {
  UNABLE_TO_VERIFY_LEAF_SIGNATURE: UNTRUSTED,
  UNABLE_TO_GET_ISSUER_CERT_LOCALLY: UNTRUSTED,
  SELF_SIGNED_CERT_IN_CHAIN: UNTRUSTED,
  DEPTH_ZERO_SELF_SIGNED_CERT: UNTRUSTED,
  CERT_HAS_EXPIRED: "the agent's certificate has expired. Renew it.",
  ERR_TLS_CERT_ALTNAME_INVALID: "the agent's certificate does not name the address cts connects to. Connect by a name the certificate holds, or set consul.tls.serverName (CONSUL_TLS_SERVER_NAME).",
  ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED: "the agent requires a client certificate (verify_incoming). Set consul.tls.certFile and keyFile (or CONSUL_CLIENT_CERT / CONSUL_CLIENT_KEY).",
  ERR_SSL_SSLV3_ALERT_BAD_CERTIFICATE: "the agent refused cts's client certificate. Use one signed by the CA the agent trusts.",
  EPROTO: "the TLS handshake failed (is the agent serving HTTPS on this port, and does it require a client certificate? Set consul.tls.certFile/keyFile).",
};

/** Consul's error body as one short line (it explains filters and ACLs well). */
function replyText(body: unknown): string | undefined {
  if (body === undefined || body === null) return undefined;
  const text = Buffer.isBuffer(body) ? body.toString("utf8") : typeof body === "string" ? body : JSON.stringify(body);
  const line = text.replace(/\s+/g, " ").trim();
  if (!line) return undefined;
  return line.length > 300 ? `${line.slice(0, 300)}…` : line;
}
