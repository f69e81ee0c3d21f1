import type { Problem } from "../errors/problems.ts";
import { parseDuration } from "../time/duration.ts";

/**
 * What a webhook can be told (docs/operations.md "Notifications"):
 * - `held`: a plan waits for `cts approve` because the task's `approval` is "always";
 * - `guard_refused`: a plan guard refused a plan (it is held for `cts approve` / `cts reject`);
 * - `failed`: a run failed (after its retries);
 * - `recovered`: a run succeeded after the task's last run had failed;
 * - `drift`: a drift check found the infrastructure changed out of band (corrected or not);
 * - `leader_changed`: this instance became, or stopped being, the high-availability leader.
 */
export const NOTIFICATION_KINDS = ["held", "guard_refused", "failed", "recovered", "drift", "leader_changed"] as const;
export type NotificationKind = (typeof NOTIFICATION_KINDS)[number];

/** The two bodies a webhook can be sent. */
export const WEBHOOK_FORMATS = ["json", "slack"] as const;

/** One receiver of notifications. */
export interface WebhookConfig {
  /** Names the webhook in logs and metrics (default `webhook-<n>`, from 1). Letters, digits, `_`, `-`. */
  name?: string;
  /** Where the body is POSTed (http or https). Never logged: Slack's URLs hold a token. */
  url: string;
  /** `"json"` (default): cts's documented JSON, signed; `"slack"`: `{ text, blocks }` for a Slack incoming webhook. */
  format?: (typeof WEBHOOK_FORMATS)[number];
  /** The kinds sent (default: every kind). */
  events?: NotificationKind[];
  /** Only these tasks' notifications (default: every task's). `leader_changed` names no task and passes. */
  tasks?: string[];
  /** The HMAC-SHA256 key of the `X-Cts-Signature-256` header. Prefer `secretEnv`. Never logged. */
  secret?: string;
  /** The environment variable holding the key (wins over `secret`). */
  secretEnv?: string;
  /** How long one attempt may take (default "10s"). */
  timeout?: string | number;
  /** Attempts after the first one fails (default 5); waits double from 1 s up to 1 min. */
  retries?: number;
}

/** Webhooks told of held plans, failures, recoveries, drift and leadership (cts-specific). */
export interface NotificationsConfig {
  webhooks: WebhookConfig[];
  /**
   * The address a receiver's person opens: links in a notification point at `<link>/v1/status/tasks/<task>`
   * and `<link>/ui` (default: the address the API listens on).
   */
  link?: string;
  /** Notifications waiting per webhook; past it the oldest waiting one is dropped (default 100). */
  queueSize?: number;
}

const NAME = /^[A-Za-z0-9_-]{1,64}$/;

/** The problems of a `notifications` block, each naming its field and the fix. */
export function notificationProblems(n: unknown, field = "notifications"): Problem[] {
  if (n === undefined) return [];
  if (!n || typeof n !== "object") return [{ field, message: "must be an object: { webhooks: [{ url: \"https://…\" }] }." }];
  const c = n as Partial<NotificationsConfig>;
  const problems: Problem[] = [];
  if (!Array.isArray(c.webhooks)) problems.push({ field: `${field}.webhooks`, message: "must be a list of webhooks, e.g. [{ url: \"https://hooks.example.com/cts\" }]." });
  if (c.link !== undefined && !isHttpUrl(c.link)) problems.push({ field: `${field}.link`, message: "must be an http(s) URL, e.g. \"https://cts.example.com:8558\"." });
  if (c.queueSize !== undefined && !(Number.isInteger(c.queueSize) && c.queueSize >= 1 && c.queueSize <= 100_000))
    problems.push({ field: `${field}.queueSize`, message: `must be a whole number from 1 to 100000 (got ${String(c.queueSize)}).` });
  const names = new Set<string>();
  (Array.isArray(c.webhooks) ? c.webhooks : []).forEach((w, i) => {
    const at = `${field}.webhooks[${i}]`;
    if (!w || typeof w !== "object") return void problems.push({ field: at, message: "must be an object with a url." });
    const name = webhookName(w, i);
    if (w.name !== undefined && (typeof w.name !== "string" || !NAME.test(w.name))) problems.push({ field: `${at}.name`, message: "must be 1-64 letters, digits, '_' or '-'." });
    else if (names.has(name)) problems.push({ field: `${at}.name`, message: `'${name}' names another webhook too; give each its own name.` });
    names.add(name);
    // The URL is not quoted back: a Slack URL holds a token.
    if (typeof w.url !== "string" || !isHttpUrl(w.url)) problems.push({ field: `${at}.url`, message: "must be an http(s) URL." });
    if (w.format !== undefined && !(WEBHOOK_FORMATS as readonly unknown[]).includes(w.format)) problems.push({ field: `${at}.format`, message: `must be "json" or "slack" (got ${JSON.stringify(w.format)?.slice(0, 40)}).` });
    if (w.events !== undefined && (!Array.isArray(w.events) || w.events.some((k) => !(NOTIFICATION_KINDS as readonly unknown[]).includes(k))))
      problems.push({ field: `${at}.events`, message: `must be a list of ${NOTIFICATION_KINDS.map((k) => `"${k}"`).join(", ")}.` });
    if (w.tasks !== undefined && (!Array.isArray(w.tasks) || w.tasks.some((t) => typeof t !== "string"))) problems.push({ field: `${at}.tasks`, message: "must be a list of task names." });
    if (w.secret !== undefined && (typeof w.secret !== "string" || w.secret.length < 8)) problems.push({ field: `${at}.secret`, message: "must be a string of at least 8 characters (better: secretEnv, the variable holding it)." });
    if (w.secretEnv !== undefined && (typeof w.secretEnv !== "string" || !/^[A-Za-z_][A-Za-z0-9_]*$/.test(w.secretEnv))) problems.push({ field: `${at}.secretEnv`, message: "must be an environment variable's name." });
    if (w.timeout !== undefined && !((parseDuration(w.timeout) ?? 0) > 0)) problems.push({ field: `${at}.timeout`, message: `'${String(w.timeout)}' is not a duration. Use e.g. "10s".` });
    if (w.retries !== undefined && !(Number.isInteger(w.retries) && w.retries >= 0 && w.retries <= 20)) problems.push({ field: `${at}.retries`, message: `must be a whole number from 0 to 20 (got ${String(w.retries)}).` });
  });
  return problems;
}

/** A webhook's name in logs and metrics. */
export function webhookName(w: Pick<WebhookConfig, "name">, index: number): string {
  return typeof w.name === "string" && w.name ? w.name : `webhook-${index + 1}`;
}

function isHttpUrl(v: unknown): boolean {
  if (typeof v !== "string") return false;
  try {
    const u = new URL(v);
    return u.protocol === "http:" || u.protocol === "https:";
  } catch {
    return false;
  }
}
