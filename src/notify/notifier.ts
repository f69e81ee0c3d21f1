import { randomUUID } from "node:crypto";
import { NOTIFICATION_KINDS, webhookName, type NotificationsConfig, type WebhookConfig } from "../config/notifications.ts";
import type { Logger } from "../log/logger.ts";
import type { Metrics } from "../metrics/metrics.ts";
import { knownSecrets } from "../secrets/redactor.ts";
import type { TaskEvent } from "../state/records.ts";
import { systemClock, type Clock } from "../time/clock.ts";
import { parseDuration } from "../time/duration.ts";
import { VERSION } from "../version.ts";
import { jsonBody, slackBody } from "./formats.ts";
import { NOTIFICATION_VERSION, leaderNotification, notificationOfEvent, type Notification, type NotificationInput, type NotificationKind } from "./notification.ts";
import { SIGNATURE_HEADER, signBody } from "./signature.ts";
import { fetchTransport, WebhookQueue, type WebhookTransport } from "./webhook-queue.ts";
import type { Backoff } from "../time/backoff.ts";

/** What the rest of cts tells the notifications. Every method returns at once: delivery is the notifier's own work. */
export interface Notifier {
  /** A task event was recorded (`before`: the task's earlier events, newest first). */
  taskEvent(event: TaskEvent, before: readonly TaskEvent[]): void;
  /** This instance became (true) or stopped being (false) the high-availability leader. */
  leadership(leader: boolean, why: string): void;
  /** Where links in notifications point (the API's address, known once it listens). */
  setLink(base: string): void;
  /** Resolves when every webhook's queue is empty and nothing is being sent (tests). */
  idle(): Promise<void>;
  /** Ends attempts in progress and drops what waits (counted as dropped). */
  close(): void;
}

export interface NotifierDeps {
  /** This instance's id (the `instance` field). */
  instance: string;
  metrics: Metrics;
  log: Logger;
  clock?: Clock;
  /** The HTTP POST (default: fetch); unit tests pass a fake. */
  post?: WebhookTransport;
  /** Where `secretEnv` is read (default: process.env). */
  env?: NodeJS.ProcessEnv;
  backoff?: Backoff;
  random?: () => number;
}

const DEFAULT_TIMEOUT_MS = 10_000;
const DEFAULT_RETRIES = 5;
const DEFAULT_QUEUE = 100;

interface Hook {
  queue: WebhookQueue;
  format: "json" | "slack";
  kinds: ReadonlySet<NotificationKind>;
  tasks?: ReadonlySet<string>;
  secret?: string;
}

/** The webhooks of a config's `notifications` (checked at load, src/config/notifications.ts), or undefined without any. */
export function createNotifier(config: NotificationsConfig | undefined, deps: NotifierDeps): Notifier | undefined {
  if (!config?.webhooks?.length) return undefined;
  const clock = deps.clock ?? systemClock;
  const env = deps.env ?? process.env;
  const hooks: Hook[] = config.webhooks.map((w, i) => hookOf(w, i, config, deps, clock, env));
  let link = config.link?.replace(/\/+$/, "");
  const send = (input: NotificationInput) => {
    const n: Notification = knownSecrets.redactDeep({
      version: NOTIFICATION_VERSION,
      id: randomUUID(),
      kind: input.kind,
      task: input.task,
      time: new Date(clock.wallNow()).toISOString(),
      instance: deps.instance,
      summary: input.summary,
      ...(link ? { links: { status: input.task ? `${link}/v1/status/tasks/${encodeURIComponent(input.task)}` : `${link}/v1/status`, dashboard: `${link}/ui` } } : {}),
      detail: input.detail,
    });
    for (const h of hooks) {
      if (!h.kinds.has(n.kind) || (n.task !== null && h.tasks && !h.tasks.has(n.task))) continue;
      const body = h.format === "slack" ? slackBody(n) : jsonBody(n);
      const headers: Record<string, string> = {
        "content-type": "application/json",
        "user-agent": `cts/${VERSION}`,
        "x-cts-event": n.kind,
        "x-cts-delivery": n.id,
        ...(h.secret ? { [SIGNATURE_HEADER.toLowerCase()]: signBody(body, h.secret) } : {}),
      };
      h.queue.push({ id: n.id, kind: n.kind, task: n.task, body, headers });
    }
  };
  return {
    taskEvent(event, before) {
      const input = notificationOfEvent(event, before);
      if (input) send(input);
    },
    leadership(leader, why) {
      send(leaderNotification(deps.instance, leader, why));
    },
    setLink(base) {
      link ??= base.replace(/\/+$/, "");
    },
    async idle() {
      await Promise.all(hooks.map((h) => h.queue.idle()));
    },
    close() {
      for (const h of hooks) h.queue.close();
    },
  };
}

function hookOf(w: WebhookConfig, i: number, config: NotificationsConfig, deps: NotifierDeps, clock: Clock, env: NodeJS.ProcessEnv): Hook {
  const name = webhookName(w, i);
  const secret = (w.secretEnv ? env[w.secretEnv] : undefined) || w.secret;
  if (w.secretEnv && !env[w.secretEnv]) deps.log.warn(`webhook '${name}': the environment variable ${w.secretEnv} (secretEnv) is not set; ${w.secret ? "using secret" : "its notifications are sent unsigned"}`, { webhook: name });
  // The key and the URL (a Slack URL holds a token) never reach a log line, an event or a body.
  knownSecrets.add(secret);
  const url = new URL(w.url);
  if (url.username || url.password || url.search || url.pathname.length > 1) knownSecrets.add(w.url);
  const queue = new WebhookQueue(
    { name, url: w.url, timeoutMs: w.timeout !== undefined ? (parseDuration(w.timeout) ?? DEFAULT_TIMEOUT_MS) : DEFAULT_TIMEOUT_MS, retries: w.retries ?? DEFAULT_RETRIES },
    {
      post: deps.post ?? fetchTransport,
      clock,
      metrics: deps.metrics,
      log: deps.log,
      size: config.queueSize ?? DEFAULT_QUEUE,
      ...(deps.backoff ? { backoff: deps.backoff } : {}),
      ...(deps.random ? { random: deps.random } : {}),
    },
  );
  return {
    queue,
    format: w.format ?? "json",
    kinds: new Set(w.events ?? NOTIFICATION_KINDS),
    ...(w.tasks ? { tasks: new Set(w.tasks) } : {}),
    ...(secret ? { secret } : {}),
  };
}
