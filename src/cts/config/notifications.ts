import { configError, type ReadBlock } from "../../config/hcl-schema.ts";
import type { HclValue } from "../../config/hcl.ts";
import { notificationProblems, type NotificationsConfig, type WebhookConfig } from "../../config/notifications.ts";

// cts's own blocks (not CTS's): webhooks told of held plans, failures, recoveries, drift and
// leadership changes (docs/operations.md "Notifications").
//
//   notifications {                    # top level: every task's
//     link       = "https://cts.example.com:8558"
//     queue_size = 100
//     webhook "ops" { url = "https://hooks.example.com/cts", secret_env = "CTS_WEBHOOK_SECRET", events = ["failed", "recovered"] }
//   }
//   task { name = "web" ... notifications { webhook "web-team" { url = "…", format = "slack" } } }   # this task's only

const ATTRS: Record<string, keyof WebhookConfig> = { url: "url", format: "format", events: "events", tasks: "tasks", secret: "secret", secret_env: "secretEnv", timeout: "timeout", retries: "retries" };

const HCL_FIELD: Record<string, string> = Object.fromEntries(Object.entries(ATTRS).map(([k, v]) => [v, k]));

/**
 * The webhooks of the top-level `notifications` block and of every task's: a task's webhook sends
 * only that task's notifications (its `tasks` is the task). Each value is checked here, with its line.
 */
export function ctsNotifications(root: ReadBlock): NotificationsConfig | undefined {
  const top = root.blocks.notifications?.[0];
  const webhooks: WebhookConfig[] = [];
  const config: Omit<NotificationsConfig, "webhooks"> = {};
  if (top) {
    if (top.attrs.link !== undefined) config.link = String(top.attrs.link);
    if (top.attrs.queue_size !== undefined) config.queueSize = Number(top.attrs.queue_size);
    for (const w of top.blocks.webhook ?? []) webhooks.push(webhookOf(w, undefined));
    const problems = notificationProblems({ ...config, webhooks: [] }, "notifications");
    if (problems[0]) throw configError(top.file, top.lines[problems[0].field.endsWith("link") ? "link" : "queue_size"] ?? top.line, `${problems[0].field.replace("queueSize", "queue_size")} ${problems[0].message}`);
  }
  for (const t of root.blocks.task ?? []) {
    const n = t.blocks.notifications?.[0];
    if (!n) continue;
    for (const key of ["link", "queue_size"]) if (n.attrs[key] !== undefined) throw configError(n.file, n.lines[key] ?? n.line, `notifications.${key} is set for every task: put it in the top-level notifications block.`);
    for (const w of n.blocks.webhook ?? []) webhooks.push(webhookOf(w, String(t.attrs.name ?? "")));
  }
  return webhooks.length || top ? { ...config, webhooks } : undefined;
}

/** One `webhook "name" { … }` block; in a task, for that task only. */
function webhookOf(b: ReadBlock, task: string | undefined): WebhookConfig {
  const w: Record<string, unknown> = { name: b.labels[0] };
  for (const [key, field] of Object.entries(ATTRS)) {
    const v: HclValue | undefined = b.attrs[key];
    if (v === undefined) continue;
    if (task !== undefined && key === "tasks") throw configError(b.file, b.lines[key] ?? b.line, `webhook "${b.labels[0]}".tasks: a task's webhook is that task's; move it to the top-level notifications block to name tasks.`);
    w[field] = key === "events" || key === "tasks" ? (Array.isArray(v) ? v : [v]) : v;
  }
  if (task !== undefined) w.tasks = [task];
  const problem = notificationProblems({ webhooks: [w] }, "webhook")[0];
  if (problem) {
    const field = problem.field.replace(/^webhook\.webhooks\[0\]\.?/, "");
    const hcl = HCL_FIELD[field] ?? field;
    throw configError(b.file, b.lines[hcl] ?? b.line, `webhook "${b.labels[0]}"${hcl ? `.${hcl}` : ""} ${problem.message}`);
  }
  return w as unknown as WebhookConfig;
}
