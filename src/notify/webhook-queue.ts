import { messageOf } from "../errors/cts-error.ts";
import type { Logger } from "../log/logger.ts";
import type { Metrics } from "../metrics/metrics.ts";
import { backoffDelay, type Backoff } from "../time/backoff.ts";
import type { Clock } from "../time/clock.ts";
import { formatDuration } from "../time/duration.ts";
import { pause } from "../time/pause.ts";
import type { NotificationKind } from "./notification.ts";

/** A receiver's answer: its HTTP status, and how long it asked cts to wait before trying again (`Retry-After`). */
export interface WebhookAnswer {
  status: number;
  retryAfterMs?: number;
}

/** One POST: resolves with the answer (or just its status), rejects when no answer came (refused, reset, aborted). */
export type WebhookTransport = (req: { url: string; body: string; headers: Record<string, string>; signal: AbortSignal }) => Promise<number | WebhookAnswer>;

/** The real transport: Node's fetch; a redirect is not followed (it answers as a 3xx, and is not retried). */
export const fetchTransport: WebhookTransport = async ({ url, body, headers, signal }) => {
  const res = await fetch(url, { method: "POST", body, headers, signal, redirect: "manual" });
  // The answer's body is not read: a receiver cannot make cts hold a big answer.
  await res.body?.cancel().catch(() => undefined);
  const retryAfterMs = retryAfter(res.headers.get("retry-after"), Date.now());
  return retryAfterMs === undefined ? { status: res.status } : { status: res.status, retryAfterMs };
};

/** The longest wait a receiver's `Retry-After` can ask for: a longer one is cut to it. */
export const MAX_RETRY_AFTER_MS = 5 * 60_000;

/** A `Retry-After` value (seconds, or an HTTP date) in milliseconds from `now`; undefined when absent or unreadable. */
export function retryAfter(value: string | null | undefined, now: number): number | undefined {
  if (value == null) return undefined;
  const v = value.trim();
  if (/^\d+$/.test(v)) return Number(v) * 1000;
  const at = Date.parse(v);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

/** Waits between attempts: 1 s, doubling up to 1 min, with equal jitter. */
export const DELIVERY_BACKOFF: Backoff = { baseMs: 1_000, maxMs: 60_000 };

/** A webhook as the queue delivers to it. */
export interface WebhookTarget {
  name: string;
  url: string;
  /** How long one attempt may take. */
  timeoutMs: number;
  /** Attempts after the first. */
  retries: number;
}

/** A body ready to send. */
export interface Delivery {
  id: string;
  kind: NotificationKind;
  task: string | null;
  body: string;
  headers: Record<string, string>;
}

export interface WebhookQueueDeps {
  post: WebhookTransport;
  clock: Clock;
  metrics: Metrics;
  log: Logger;
  /** Deliveries waiting (the one being sent not counted); past it the oldest waiting is dropped. */
  size: number;
  backoff?: Backoff;
  random?: () => number;
}

/** 408 and 429 ask to try later; any other 4xx (a wrong URL, a revoked Slack hook) will not change, and 3xx is not followed. */
const retryable = (status: number): boolean => status >= 500 || status === 408 || status === 429;

/**
 * One webhook's deliveries, in order, one at a time: a bounded queue (the oldest waiting delivery
 * is dropped when it is full), each attempt cut off after the webhook's timeout, failed attempts
 * retried with capped exponential backoff, then given up. Nothing here is awaited by a run:
 * `push` returns at once. Every wait runs on the clock; `close` ends them and drops what waits.
 */
export class WebhookQueue {
  private readonly waiting: Delivery[] = [];
  private draining: Promise<void> | undefined;
  private readonly stop = new AbortController();

  constructor(
    readonly target: WebhookTarget,
    private readonly deps: WebhookQueueDeps,
  ) {}

  /** Deliveries waiting, not counting the one being sent. */
  get depth(): number {
    return this.waiting.length;
  }

  /** Queues a delivery; returns at once. */
  push(d: Delivery): void {
    if (this.stop.signal.aborted) return this.dropped(d, "cts is stopping");
    this.waiting.push(d);
    if (this.waiting.length > this.deps.size) this.dropped(this.waiting.shift()!, `its queue is full (${this.deps.size} waiting)`);
    this.draining ??= this.drain().finally(() => (this.draining = undefined));
  }

  /** Resolves when nothing waits or is being sent (tests). */
  async idle(): Promise<void> {
    while (this.draining) await this.draining;
  }

  /** Ends the attempt in progress and every wait; what waits is dropped. */
  close(): void {
    this.stop.abort();
    for (const d of this.waiting.splice(0)) this.dropped(d, "cts is stopping");
  }

  private dropped(d: Delivery, why: string): void {
    this.deps.metrics.notificationSent(this.target.name, d.kind, "dropped");
    this.deps.log.warn(`webhook '${this.target.name}': dropped the ${d.kind} notification${about(d)}: ${why}`, { webhook: this.target.name, kind: d.kind, ...(d.task ? { task: d.task } : {}) });
  }

  private async drain(): Promise<void> {
    for (let d = this.waiting.shift(); d && !this.stop.signal.aborted; d = this.waiting.shift()) await this.deliver(d);
  }

  private async deliver(d: Delivery): Promise<void> {
    const { target } = this;
    const { clock, log, metrics } = this.deps;
    const attempts = target.retries + 1;
    const fields = { webhook: target.name, kind: d.kind, delivery: d.id, ...(d.task ? { task: d.task } : {}) };
    for (let attempt = 1; ; attempt++) {
      const tried = await this.attempt(d);
      if (this.stop.signal.aborted) return this.dropped(d, "cts is stopping");
      if (tried.ok) {
        metrics.notificationSent(target.name, d.kind, "delivered");
        log.debug(`webhook '${target.name}': delivered the ${d.kind} notification${about(d)} (attempt ${attempt})`, fields);
        return;
      }
      const last = attempt >= attempts || !tried.retry;
      if (last) {
        metrics.notificationSent(target.name, d.kind, "failed");
        log.warn(`webhook '${target.name}': gave up the ${d.kind} notification${about(d)} after ${attempt} attempt(s): ${tried.why}`, fields);
        return;
      }
      // A receiver that says when to try again (429, 503 with Retry-After) is waited for, up to a cap.
      const asked = tried.retryAfterMs === undefined ? 0 : Math.min(tried.retryAfterMs, MAX_RETRY_AFTER_MS);
      const delay = Math.max(asked, backoffDelay(this.deps.backoff ?? DELIVERY_BACKOFF, attempt, this.deps.random));
      log.info(`webhook '${target.name}': the ${d.kind} notification${about(d)} was not taken (${tried.why}); attempt ${attempt + 1} of ${attempts} in ${formatDuration(Math.round(delay))}`, fields);
      if (!(await pause(delay, this.stop.signal, clock))) return this.dropped(d, "cts is stopping");
    }
  }

  /** One POST, cut off after the timeout; measured in the attempt histogram. */
  private async attempt(d: Delivery): Promise<{ ok: true } | { ok: false; retry: boolean; why: string; retryAfterMs?: number }> {
    const { clock, metrics } = this.deps;
    const { name, url, timeoutMs } = this.target;
    const abort = new AbortController();
    let timedOut = false;
    const timer = clock.setTimeout(() => {
      timedOut = true;
      abort.abort();
    }, timeoutMs);
    const onStop = () => abort.abort();
    this.stop.signal.addEventListener("abort", onStop, { once: true });
    const started = clock.now();
    const seconds = () => Math.max(0, clock.now() - started) / 1000;
    try {
      const answer = await this.deps.post({ url, body: d.body, headers: d.headers, signal: abort.signal });
      const { status, retryAfterMs } = typeof answer === "number" ? { status: answer, retryAfterMs: undefined } : answer;
      const ok = status >= 200 && status < 300;
      metrics.notificationAttempt(name, ok ? "ok" : "error", seconds());
      if (ok) return { ok };
      return { ok, retry: retryable(status), why: `HTTP ${status}`, ...(retryAfterMs !== undefined ? { retryAfterMs } : {}) };
    } catch (err) {
      metrics.notificationAttempt(name, timedOut ? "timeout" : "error", seconds());
      // The cause only: an error's text may name the URL (a Slack URL holds a token).
      return { ok: false, retry: true, why: timedOut ? `no answer within ${formatDuration(timeoutMs)}` : causeOf(err) };
    } finally {
      clock.clearTimeout(timer);
      this.stop.signal.removeEventListener("abort", onStop);
    }
  }
}

function about(d: Delivery): string {
  return d.task ? ` of task '${d.task}'` : "";
}

/** Why a POST got no answer, in words that never carry the URL: the system error's code. */
function causeOf(err: unknown): string {
  const cause = (err as { cause?: { code?: unknown } } | undefined)?.cause;
  const code = typeof cause?.code === "string" ? cause.code : undefined;
  if (code) return `no answer (${code})`;
  const name = (err as { name?: unknown } | undefined)?.name;
  return name === "AbortError" ? "aborted" : `no answer (${messageOf(err).replace(/\bhttps?:\/\/\S+/g, "<url>").slice(0, 200)})`;
}
