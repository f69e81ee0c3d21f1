import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { createHmac } from "node:crypto";
import { fakeClock } from "../support/fake-clock.ts";
import { settled } from "../support/waits.ts";
import { createLogger } from "../../src/log/logger.ts";
import { noMetrics, type Metrics } from "../../src/metrics/metrics.ts";
import { knownSecrets } from "../../src/secrets/redactor.ts";
import { NO_JITTER } from "../../src/time/backoff.ts";
import { signBody, verifySignature, SIGNATURE_HEADER } from "../../src/notify/signature.ts";
import { jsonBody, slackBody, slackEscape } from "../../src/notify/formats.ts";
import { leaderNotification, notificationOfEvent, type Notification } from "../../src/notify/notification.ts";
import { retryAfter, WebhookQueue, type Delivery, type WebhookTransport } from "../../src/notify/webhook-queue.ts";
import { createNotifier } from "../../src/notify/notifier.ts";
import { notificationProblems } from "../../src/config/notifications.ts";
import type { TaskEvent } from "../../src/state/records.ts";

const quiet = createLogger({ level: "error", write: () => undefined });

function event(fields: Partial<TaskEvent> & { success: boolean }, task = "web"): TaskEvent {
  return { id: `e-${Math.random()}`, start_time: "2026-01-01T00:00:00.000Z", end_time: "2026-01-01T00:00:01.000Z", task_name: task, error: null, config: {}, ...fields };
}

/** Metrics that count what the notifications report. */
function countingMetrics() {
  const sent: string[] = [];
  const attempts: Array<{ result: string; seconds: number }> = [];
  const metrics: Metrics = {
    ...noMetrics,
    notificationSent: (webhook, kind, outcome) => void sent.push(`${webhook} ${kind} ${outcome}`),
    notificationAttempt: (_webhook, result, seconds) => void attempts.push({ result, seconds }),
  };
  return { metrics, sent, attempts };
}

const sample: Notification = {
  version: 1,
  id: "11111111-2222-3333-4444-555555555555",
  kind: "failed",
  task: "web",
  time: "2026-01-01T00:00:00.000Z",
  instance: "cts-a",
  summary: "Task 'web' failed: <!channel> & friends",
  links: { status: "http://127.0.0.1:8558/v1/status/tasks/web", dashboard: "http://127.0.0.1:8558/ui" },
  detail: { outcome: "failed", error: "<!channel> & friends" },
};

describe("the signature of a notification", () => {
  it("is sha256= and the hex HMAC-SHA256 of the raw body with the webhook's secret", () => {
    const body = '{"version":1}';
    assert.equal(signBody(body, "a-long-secret"), `sha256=${createHmac("sha256", "a-long-secret").update(body).digest("hex")}`);
    assert.equal(SIGNATURE_HEADER, "X-Cts-Signature-256");
  });

  it("verifies only the same bytes with the same secret", () => {
    const body = jsonBody(sample);
    const header = signBody(body, "a-long-secret");
    assert.equal(verifySignature(body, header, "a-long-secret"), true);
    assert.equal(verifySignature(Buffer.from(body), header, "a-long-secret"), true);
    assert.equal(verifySignature(body + " ", header, "a-long-secret"), false, "a changed body");
    assert.equal(verifySignature(body, header, "another-secret"), false, "another secret");
    for (const bad of [undefined, null, "", "sha256=zz", header.toUpperCase(), header.replace("sha256=", "sha1=")]) assert.equal(verifySignature(body, bad, "a-long-secret"), false, String(bad));
  });
});

describe("the bodies", () => {
  it("json: the notification itself, with its version, kind, task, time, summary and links", () => {
    const parsed = JSON.parse(jsonBody(sample)) as Notification;
    assert.deepEqual(parsed, sample);
  });

  it("slack: text and blocks an incoming webhook takes, every text of cts escaped", () => {
    const body = JSON.parse(slackBody(sample)) as { text: string; blocks: Array<{ type: string; text?: { text: string }; elements?: Array<{ text: string }> }> };
    assert.match(body.text, /^Task failed: Task 'web' failed: &lt;!channel&gt; &amp; friends$/);
    assert.equal(body.blocks[0]!.type, "section");
    assert.ok(!JSON.stringify(body).includes("<!channel>"), "no mention reaches Slack");
    const context = body.blocks.at(-1)!;
    assert.equal(context.type, "context");
    assert.match(context.elements!.map((e) => e.text).join(" "), /<http:\/\/127\.0\.0\.1:8558\/v1\/status\/tasks\/web\|status> · <http:\/\/127\.0\.0\.1:8558\/ui\|dashboard>/);
    assert.equal(slackEscape("a<b>&c"), "a&lt;b&gt;&amp;c");
  });
});

describe("what a task event tells", () => {
  it("a failed run: failed, with the error without the task's prefix", () => {
    const n = notificationOfEvent(event({ success: false, outcome: "failed", error: { message: "Task 'web': terraform apply: boom" } }), []);
    assert.equal(n?.kind, "failed");
    assert.equal(n?.task, "web");
    assert.equal(n?.detail.error, "terraform apply: boom");
    assert.match(n!.summary, /^Task 'web' failed: terraform apply: boom$/);
  });

  it("a success after a failed run: recovered; after a success or with no history: nothing", () => {
    const failed = event({ success: false, outcome: "failed", error: { message: "x" } });
    const ok = event({ success: true, outcome: "applied", changes: { add: 1, change: 0, destroy: 0 } });
    assert.equal(notificationOfEvent(ok, [failed])?.kind, "recovered");
    assert.equal(notificationOfEvent(ok, [event({ success: true, outcome: "drift" }), failed])?.kind, "recovered", "a drift check between them is not a run");
    assert.equal(notificationOfEvent(ok, [event({ success: true, outcome: "applied" }), failed]), undefined);
    assert.equal(notificationOfEvent(ok, []), undefined);
    assert.equal(notificationOfEvent(event({ success: true, outcome: "no-op" }), []), undefined);
  });

  it("a held plan: guard_refused when a guard refused it, held when every plan waits; told once per hold", () => {
    const hold = { reasons: ["destroys 3 resources (max 1)"], why: "guards" as const, heldAt: "2026-01-01T00:00:00.000Z" };
    const refused = event({ success: false, outcome: "held", hold, changes: { add: 0, change: 0, destroy: 3 } });
    const n = notificationOfEvent(refused, []);
    assert.equal(n?.kind, "guard_refused");
    assert.match(n!.summary, /destroys 3 resources \(max 1\).*cts approve web/);
    assert.deepEqual(n?.detail.hold, { why: "guards", reasons: hold.reasons, held_at: hold.heldAt });
    assert.equal(notificationOfEvent(event({ success: false, outcome: "held", hold }), [refused]), undefined, "the same hold again");
    const always = event({ success: false, outcome: "held", hold: { reasons: ["approval is always"], why: "always", heldAt: "2026-01-02T00:00:00.000Z" } });
    assert.equal(notificationOfEvent(always, [refused])?.kind, "held");
  });

  it("drift found: drift, saying whether it was corrected", () => {
    const n = notificationOfEvent(event({ success: true, outcome: "drift", changes: { add: 0, change: 1, destroy: 0 }, drift: { corrected: true } }), []);
    assert.equal(n?.kind, "drift");
    assert.deepEqual(n?.detail.drift, { corrected: true });
    assert.match(n!.summary, /0 to add, 1 to change, 0 to destroy\); applied again/);
  });

  it("a leadership change names the instance and no task", () => {
    const n = leaderNotification("cts-b", true, "acquired the leader lock");
    assert.equal(n.kind, "leader_changed");
    assert.equal(n.task, null);
    assert.equal(n.detail.leader, true);
  });
});

function delivery(n: number): Delivery {
  return { id: `d${n}`, kind: "failed", task: "web", body: `{"n":${n}}`, headers: {} };
}

describe("a webhook's queue", () => {
  it("retries a 500 with capped exponential backoff on the clock, then gives up and counts it failed", async () => {
    const clock = fakeClock();
    const { metrics, sent, attempts } = countingMetrics();
    const at: number[] = [];
    const post: WebhookTransport = async () => {
      at.push(clock.now());
      return 500;
    };
    const q = new WebhookQueue({ name: "ops", url: "http://127.0.0.1:1/x", timeoutMs: 5_000, retries: 5 }, { post, clock, metrics, log: quiet, size: 10, backoff: { baseMs: 1_000, maxMs: 4_000, jitter: NO_JITTER } });
    q.push(delivery(1));
    await clock.runUntil(() => sent.length === 1, "the delivery to end");
    assert.deepEqual(at, [0, 1_000, 3_000, 7_000, 11_000, 15_000], "waits of 1, 2, 4, then 4 s (the cap)");
    assert.deepEqual(sent, ["ops failed failed"]);
    assert.equal(attempts.length, 6);
    assert.ok(attempts.every((a) => a.result === "error"));
  });

  it("delivers on the first 2xx and does not retry a 4xx other than 408 and 429", async () => {
    const clock = fakeClock();
    const { metrics, sent } = countingMetrics();
    const answers = [503, 429, 204, 404];
    let calls = 0;
    const post: WebhookTransport = async () => answers[calls++]!;
    const q = new WebhookQueue({ name: "ops", url: "http://127.0.0.1:1/x", timeoutMs: 5_000, retries: 5 }, { post, clock, metrics, log: quiet, size: 10, backoff: { baseMs: 10, maxMs: 10, jitter: NO_JITTER } });
    q.push(delivery(1));
    q.push(delivery(2));
    await clock.runUntil(() => sent.length === 2, "both deliveries to end");
    assert.deepEqual(sent, ["ops failed delivered", "ops failed failed"]);
    assert.equal(calls, 4, "the 404 was not tried again");
  });

  it("waits as long as a receiver's Retry-After asks (up to 5 minutes), never less than its backoff", async () => {
    const clock = fakeClock();
    const { metrics, sent } = countingMetrics();
    const at: number[] = [];
    const answers = [{ status: 429, retryAfterMs: 30_000 }, { status: 503, retryAfterMs: 3_600_000 }, { status: 503, retryAfterMs: 0 }, 204];
    const post: WebhookTransport = async () => {
      at.push(clock.now());
      return answers[at.length - 1]!;
    };
    const q = new WebhookQueue({ name: "ops", url: "http://127.0.0.1:1/x", timeoutMs: 5_000, retries: 5 }, { post, clock, metrics, log: quiet, size: 10, backoff: { baseMs: 1_000, maxMs: 4_000, jitter: NO_JITTER } });
    q.push(delivery(1));
    await clock.runUntil(() => sent.length === 1, "the delivery to end");
    assert.deepEqual(at, [0, 30_000, 330_000, 334_000], "30 s as asked, an hour cut to 5 minutes, then the backoff (4 s) over an answer of 0");
    assert.deepEqual(sent, ["ops failed delivered"]);
  });

  it("reads Retry-After as seconds or as an HTTP date, and ignores what it cannot read", () => {
    const now = Date.parse("2026-11-28T08:00:00Z");
    assert.equal(retryAfter("120", now), 120_000);
    assert.equal(retryAfter("Sat, 28 Nov 2026 08:01:30 GMT", now), 90_000);
    assert.equal(retryAfter("Sat, 28 Nov 2026 07:00:00 GMT", now), 0, "a date passed: at once");
    assert.equal(retryAfter("soon", now), undefined);
    assert.equal(retryAfter(null, now), undefined);
  });

  it("cuts an attempt off after the timeout and counts it as a timeout", async () => {
    const clock = fakeClock();
    const { metrics, sent, attempts } = countingMetrics();
    // A receiver that never answers: the attempt ends only when its signal aborts.
    const post: WebhookTransport = ({ signal }) => new Promise((_, reject) => signal.addEventListener("abort", () => reject(new DOMException("aborted", "AbortError"))));
    const q = new WebhookQueue({ name: "slow", url: "http://127.0.0.1:1/x", timeoutMs: 2_000, retries: 1 }, { post, clock, metrics, log: quiet, size: 10, backoff: { baseMs: 1_000, maxMs: 1_000, jitter: NO_JITTER } });
    q.push(delivery(1));
    await clock.runUntil(() => sent.length === 1, "the delivery to end");
    assert.deepEqual(sent, ["slow failed failed"]);
    assert.deepEqual(attempts, [{ result: "timeout", seconds: 2 }, { result: "timeout", seconds: 2 }]);
    assert.equal(clock.now(), 5_000, "2 s, 1 s backoff, 2 s");
  });

  it("holds at most its size waiting: the oldest waiting one is dropped and counted", async () => {
    const clock = fakeClock();
    const { metrics, sent } = countingMetrics();
    const bodies: string[] = [];
    let release!: () => void;
    const first = new Promise<void>((r) => (release = r));
    const post: WebhookTransport = async ({ body }) => {
      bodies.push(body);
      if (bodies.length === 1) await first;
      return 200;
    };
    const q = new WebhookQueue({ name: "ops", url: "http://127.0.0.1:1/x", timeoutMs: 60_000, retries: 0 }, { post, clock, metrics, log: quiet, size: 2 });
    for (let i = 1; i <= 5; i++) q.push(delivery(i));
    await settled();
    assert.equal(q.depth, 2, "one being sent, two waiting");
    assert.deepEqual(sent, ["ops failed dropped", "ops failed dropped"]);
    release();
    await q.idle();
    assert.deepEqual(bodies, ['{"n":1}', '{"n":4}', '{"n":5}'], "in order; the oldest waiting (2, 3) dropped");
    assert.equal(sent.filter((s) => s.endsWith("delivered")).length, 3);
  });

  it("close ends the attempt in progress and drops what waits", async () => {
    const clock = fakeClock();
    const { metrics, sent } = countingMetrics();
    const post: WebhookTransport = ({ signal }) => new Promise((_, reject) => signal.addEventListener("abort", () => reject(new Error("aborted"))));
    const q = new WebhookQueue({ name: "ops", url: "http://127.0.0.1:1/x", timeoutMs: 60_000, retries: 3 }, { post, clock, metrics, log: quiet, size: 10 });
    q.push(delivery(1));
    q.push(delivery(2));
    await settled();
    q.close();
    await q.idle();
    assert.deepEqual(sent.sort(), ["ops failed dropped", "ops failed dropped"]);
    q.push(delivery(3));
    assert.equal(sent.length, 3, "after close, a push is dropped at once");
    assert.equal(clock.pending(), 0, "no timer left behind");
  });
});

describe("the notifier", () => {
  it("sends each webhook the kinds and tasks it asked for, signed, with secrets redacted", async () => {
    const clock = fakeClock();
    const got: Array<{ url: string; body: string; headers: Record<string, string> }> = [];
    const post: WebhookTransport = async (req) => {
      got.push(req);
      return 200;
    };
    const taskSecret = `task-secret-${Math.random().toString(36).slice(2)}`;
    knownSecrets.add(taskSecret);
    const n = createNotifier(
      {
        link: "https://cts.example.com/",
        webhooks: [
          { name: "all", url: "http://127.0.0.1:1/all", secretEnv: "CTS_TEST_HOOK_SECRET" },
          { name: "failures", url: "http://127.0.0.1:1/failures", events: ["failed"], tasks: ["db"], format: "slack" },
        ],
      },
      { instance: "cts-a", metrics: noMetrics, log: quiet, clock, post, env: { CTS_TEST_HOOK_SECRET: "hook-secret-123" } },
    )!;
    // The event store scrubs events; the notifier redacts again what it sends.
    n.taskEvent(event({ success: false, outcome: "failed", error: { message: `Task 'web': cannot write /tmp/${taskSecret}/x` } }), []);
    n.taskEvent(event({ success: false, outcome: "failed", error: { message: "boom" } }, "db"), []);
    n.leadership(true, "acquired the leader lock");
    await n.idle();
    const all = got.filter((g) => g.url.endsWith("/all"));
    assert.equal(all.length, 3);
    assert.deepEqual(got.filter((g) => g.url.endsWith("/failures")).map((g) => (JSON.parse(g.body) as { text: string }).text), ["Task failed: Task 'db' failed: boom"]);
    for (const g of all) {
      assert.equal(verifySignature(g.body, g.headers["x-cts-signature-256"], "hook-secret-123"), true);
      assert.equal(g.headers["content-type"], "application/json");
      assert.ok(!g.body.includes(taskSecret), "no task secret in a body");
      assert.ok(!g.body.includes("hook-secret-123"), "no webhook secret in a body");
    }
    const failed = JSON.parse(all[0]!.body) as Notification;
    assert.equal(failed.version, 1);
    assert.equal(failed.kind, "failed");
    assert.equal(all[0]!.headers["x-cts-event"], "failed");
    assert.equal(all[0]!.headers["x-cts-delivery"], failed.id);
    assert.equal(failed.time, "2026-01-01T00:00:00.000Z", "the clock's wall time");
    assert.deepEqual(failed.links, { status: "https://cts.example.com/v1/status/tasks/web", dashboard: "https://cts.example.com/ui" });
    assert.match(failed.summary, /\[redacted\]/);
    const leader = JSON.parse(all[2]!.body) as Notification;
    assert.equal(leader.kind, "leader_changed");
    assert.equal(leader.task, null);
    assert.equal(got.filter((g) => g.url.endsWith("/failures")).length, 1, "leader_changed is not in that webhook's events");
    n.close();
  });

  it("sends unsigned when no secret is set, and is absent without webhooks", async () => {
    const got: Array<Record<string, string>> = [];
    const n = createNotifier({ webhooks: [{ url: "http://127.0.0.1:1/x" }] }, { instance: "i", metrics: noMetrics, log: quiet, clock: fakeClock(), post: async (r) => (got.push(r.headers), 200), env: {} })!;
    n.leadership(false, "session lost");
    await n.idle();
    assert.equal(got[0]!["x-cts-signature-256"], undefined);
    assert.equal(createNotifier(undefined, { instance: "i", metrics: noMetrics, log: quiet }), undefined);
    assert.equal(createNotifier({ webhooks: [] }, { instance: "i", metrics: noMetrics, log: quiet }), undefined);
  });
});

describe("the notifications config", () => {
  it("accepts a full config", () => {
    assert.deepEqual(
      notificationProblems({ link: "https://cts.example.com", queueSize: 50, webhooks: [{ name: "ops", url: "https://hooks.example.com/x", format: "slack", events: ["failed", "recovered"], tasks: ["web"], secretEnv: "HOOK_KEY", timeout: "5s", retries: 3 }] }),
      [],
    );
  });

  it("names each wrong field with the fix, and never quotes a URL back", () => {
    const problems = notificationProblems({
      queueSize: 0,
      webhooks: [
        { url: "ftp://hooks.example.com/token-in-url", format: "xml", events: ["exploded"], timeout: "soon", retries: -1, secret: "short" },
        { name: "a b", url: "https://x.example.com" },
        { name: "ops", url: "https://x.example.com" },
        { name: "ops", url: "https://y.example.com" },
      ],
    } as never);
    const fields = problems.map((p) => p.field);
    assert.deepEqual(fields, [
      "notifications.queueSize",
      "notifications.webhooks[0].url",
      "notifications.webhooks[0].format",
      "notifications.webhooks[0].events",
      "notifications.webhooks[0].secret",
      "notifications.webhooks[0].timeout",
      "notifications.webhooks[0].retries",
      "notifications.webhooks[1].name",
      "notifications.webhooks[3].name",
    ]);
    assert.ok(!JSON.stringify(problems).includes("token-in-url"));
    assert.match(problems.find((p) => p.field.endsWith("events"))!.message, /"held", "guard_refused", "failed", "recovered", "drift", "leader_changed"/);
  });
});
