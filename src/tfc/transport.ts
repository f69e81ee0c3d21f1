import { Agent as HttpAgent, request as httpRequest, type IncomingHttpHeaders } from "node:http";
import { Agent as HttpsAgent, request as httpsRequest } from "node:https";
import { systemClock, type Clock } from "../time/clock.ts";
import { CtsError } from "../errors/cts-error.ts";
import { pause } from "../time/pause.ts";
import { knownSecrets } from "../secrets/redactor.ts";
import { answerError, badAnswer, cancelledError, type CallSite, networkError } from "./errors.ts";
import { backoffMs, DEFAULT_RETRY, rateLimitWaitMs, type RetryPolicy } from "./retry.ts";
import { type TfcTlsOptions, tlsAgentOptions } from "./tls.ts";

/** The media type of JSON:API documents. */
export const JSON_API = "application/vnd.api+json";

/** How to reach a Terraform Cloud / Enterprise API. */
export interface TransportOptions {
  /** `app.terraform.io`, `https://tfe.example.com` or `http://127.0.0.1:port` (a scheme-less name gets https). */
  hostname: string;
  /** The API token: sent only in the Authorization header of API calls, never logged. */
  token: string;
  tls?: TfcTlsOptions;
  retry?: Partial<RetryPolicy>;
  /** Time limit of one request (default 30 s). */
  requestTimeoutMs?: number;
  /** Retry, poll and upload waits run on it, and the driver's run and lock limits; tests pass a fake clock. Default: the real one. */
  clock?: Clock;
}

/** One call. `path` is under the API (`/api/v2/…`) or an absolute archivist URL (sent without the token). */
export interface CallOptions {
  method: "GET" | "POST" | "PATCH" | "PUT" | "DELETE";
  path: string;
  query?: Record<string, string | undefined>;
  /** A JSON:API document, or raw bytes (uploads). */
  body?: unknown;
  contentType?: string;
  signal?: AbortSignal | undefined;
  /** Safe to repeat after a 5xx or a dropped connection (GET, PUT, PATCH, DELETE and idempotent actions). */
  idempotent?: boolean;
  /** Statuses the caller handles itself (e.g. 404 for "not there yet"). */
  accept?: number[];
}

/** An answer. */
export interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

/**
 * The HTTP layer of the Terraform Cloud client, on node:http/https (as cts's other clients):
 * TLS settings go straight onto an https.Agent, a request never follows redirects (so the token
 * cannot travel to where a redirect points), and AbortSignal reaches the socket. Retries 429s as
 * the server asks and 5xx/network failures of idempotent calls with capped, jittered backoff.
 */
export class Transport {
  readonly baseUrl: URL;
  private readonly agent: HttpAgent | HttpsAgent;
  private readonly policy: RetryPolicy;
  private readonly timeoutMs: number;
  /** Every wait of the client (retries, polls, uploads) and of its driver runs on it. */
  readonly clock: Clock;

  constructor(private readonly options: TransportOptions) {
    this.clock = options.clock ?? systemClock;
    this.baseUrl = parseHostname(options.hostname);
    knownSecrets.add(options.token);
    this.policy = { ...DEFAULT_RETRY, ...options.retry };
    this.timeoutMs = options.requestTimeoutMs ?? 30_000;
    this.agent = this.baseUrl.protocol === "https:" ? new HttpsAgent({ keepAlive: true, ...tlsAgentOptions(options.tls) }) : new HttpAgent({ keepAlive: true });
  }

  /** Makes a call with the retry policy; a non-2xx answer not in `accept` throws a catalogued CtsError. */
  async call(opts: CallOptions): Promise<Answer> {
    const url = this.url(opts);
    const site: CallSite = { method: opts.method, path: url.origin === this.baseUrl.origin ? url.pathname : `${url.origin}/…` };
    for (let attempt = 1; ; attempt++) {
      if (opts.signal?.aborted) throw cancelledError(site);
      let answer: Answer;
      try {
        answer = await this.send(url, opts);
      } catch (err) {
        if (opts.signal?.aborted) throw cancelledError(site);
        const failure = networkError(err, site, this.baseUrl.host);
        // A refused connection never reached the server, so repeating it is safe for any call.
        const retryable = failure.code === "TFC_UNREACHABLE" && (opts.idempotent || (err as NodeJS.ErrnoException).code === "ECONNREFUSED");
        if (!retryable || attempt >= this.policy.attempts) throw failure;
        await this.wait(backoffMs(this.policy, attempt), opts.signal, site);
        continue;
      }
      const { status } = answer;
      if (status === 429 && attempt < this.policy.rateLimitAttempts) {
        await this.wait(rateLimitWaitMs(this.policy, attempt, answer.headers, this.clock.wallNow()), opts.signal, site);
        continue;
      }
      if (status >= 500 && opts.idempotent && attempt < this.policy.attempts) {
        await this.wait(backoffMs(this.policy, attempt), opts.signal, site);
        continue;
      }
      if ((status >= 200 && status < 300) || opts.accept?.includes(status)) return answer;
      throw answerError(status, answer.body, headerOf(answer.headers, "content-type"), site);
    }
  }

  /** A call whose answer is a JSON:API document (undefined for an accepted non-2xx status or an empty body). */
  async json(opts: CallOptions): Promise<any> {
    const answer = await this.call(opts);
    if (answer.status < 200 || answer.status >= 300 || !answer.body.trim()) return undefined;
    try {
      return JSON.parse(answer.body);
    } catch {
      throw badAnswer({ method: opts.method, path: this.url(opts).pathname }, `status ${answer.status} with a body that is not JSON`);
    }
  }

  /** Closes kept-alive connections. */
  close(): void {
    this.agent.destroy();
  }

  private url(opts: CallOptions): URL {
    const url = /^https?:\/\//.test(opts.path) ? new URL(opts.path) : new URL(opts.path, this.baseUrl);
    for (const [k, v] of Object.entries(opts.query ?? {})) if (v !== undefined) url.searchParams.set(k, v);
    return url;
  }

  private async wait(ms: number, signal: AbortSignal | undefined, site: CallSite): Promise<void> {
    if (!(await pause(ms, signal, this.clock))) throw cancelledError(site);
  }

  private send(url: URL, opts: CallOptions): Promise<Answer> {
    const api = url.origin === this.baseUrl.origin && url.pathname.startsWith("/api/");
    const payload = opts.body === undefined ? undefined : Buffer.isBuffer(opts.body) ? opts.body : Buffer.from(JSON.stringify(opts.body));
    const headers: Record<string, string> = { Accept: JSON_API, "User-Agent": "cts-tfc-client" };
    if (api) headers.Authorization = `Bearer ${this.options.token}`;
    if (payload) {
      headers["Content-Type"] = opts.contentType ?? JSON_API;
      headers["Content-Length"] = String(payload.length);
    }
    const signal = opts.signal ? AbortSignal.any([opts.signal, AbortSignal.timeout(this.timeoutMs)]) : AbortSignal.timeout(this.timeoutMs);
    const request = url.protocol === "https:" ? httpsRequest : httpRequest;
    const agent = url.protocol === this.baseUrl.protocol ? this.agent : undefined;
    return new Promise<Answer>((resolve, reject) => {
      const req = request(url, { method: opts.method, headers, agent, signal }, (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("error", reject);
        res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString("utf8") }));
      });
      req.on("error", (err) => reject(signal.aborted && !opts.signal?.aborted ? Object.assign(new Error(`no answer within ${this.timeoutMs} ms`), { code: "ETIMEDOUT" }) : err));
      req.end(payload);
    });
  }
}

/** The first value of a header. */
export function headerOf(headers: IncomingHttpHeaders, name: string): string | undefined {
  const v = headers[name];
  return Array.isArray(v) ? v[0] : v;
}

function parseHostname(hostname: string): URL {
  const raw = hostname.trim();
  try {
    const url = new URL(/^[a-z][a-z0-9+.-]*:\/\//i.test(raw) ? raw : `https://${raw}`);
    if (url.protocol !== "https:" && url.protocol !== "http:") throw new Error(url.protocol);
    return new URL(url.origin);
  } catch {
    throw new CtsError("CONFIG_INVALID", "usage", `driver.terraformCloud.hostname '${raw}' is not a host name or URL. Use e.g. app.terraform.io or https://tfe.example.com.`);
  }
}
