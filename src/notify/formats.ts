import type { Notification, NotificationKind } from "./notification.ts";

/** The body format "json": the notification itself (docs/operations.md "Notifications"). */
export function jsonBody(n: Notification): string {
  return JSON.stringify(n);
}

const HEADLINES: Record<NotificationKind, string> = {
  held: ":hourglass: Plan waits for approval",
  guard_refused: ":no_entry: Plan guard refused a plan",
  failed: ":x: Task failed",
  recovered: ":white_check_mark: Task recovered",
  drift: ":warning: Drift found",
  leader_changed: ":crown: Leader changed",
};

/** Text as Slack's mrkdwn shows it literally: `&`, `<` and `>` escaped (a catalog value cannot make a link or a mention). */
export function slackEscape(text: string): string {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}

/** A URL inside Slack's `<url|label>`: the characters that would end it, escaped. */
function slackLink(url: string, label: string): string {
  return `<${url.replace(/[<>|]/g, encodeURIComponent)}|${label}>`;
}

/**
 * The body format "slack": what a Slack incoming webhook takes, `{ text, blocks }` (text is the
 * fallback shown in notifications; blocks the message). Every text from cts is escaped.
 */
export function slackBody(n: Notification): string {
  const headline = HEADLINES[n.kind];
  const blocks: unknown[] = [{ type: "section", text: { type: "mrkdwn", text: `*${headline}*\n${slackEscape(n.summary)}` } }];
  if (n.detail.error && n.kind !== "failed") blocks.push({ type: "section", text: { type: "mrkdwn", text: "```" + slackEscape(n.detail.error.replace(/```/g, "'''")) + "```" } });
  const context = [`${n.task ? `task *${slackEscape(n.task)}* · ` : ""}cts *${slackEscape(n.instance)}* · ${n.time}`];
  if (n.links) context.push(`${slackLink(n.links.status, "status")} · ${slackLink(n.links.dashboard, "dashboard")}`);
  if (n.detail.run_url) context.push(slackLink(n.detail.run_url, "Terraform Cloud run"));
  blocks.push({ type: "context", elements: context.map((text) => ({ type: "mrkdwn", text })) });
  return JSON.stringify({ text: `${headline.replace(/^:[a-z_]+: /, "")}: ${slackEscape(n.summary)}`, blocks });
}
