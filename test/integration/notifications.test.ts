import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { startConsul, type ConsulAgent } from "../support/consul.ts";
import { PUBLIC_API, tempDir, waitFor } from "../support/cts.ts";
import { tools } from "../support/tools.ts";
import { writeHaConfig } from "../support/cts-process.ts";
import { parseMetrics, sampleValue } from "../support/prometheus.ts";
import { loadConfig } from "../../src/config/load.ts";
import { createLogger } from "../../src/log/logger.ts";
import { startDaemon, type Daemon } from "../../src/daemon/compose.ts";
import { inProcessSynthesizer } from "../../src/synth/synthesizer.ts";
import { verifySignature } from "../../src/notify/signature.ts";
import type { Notification } from "../../src/notify/notification.ts";

const FIXTURE = fileURLToPath(new URL("../fixtures/notify-tasks.ts", import.meta.url));

interface Received {
  path: string;
  headers: IncomingMessage["headers"];
  /** The raw bytes, as a receiver verifies them. */
  body: Buffer;
  /** When it arrived (ms). */
  at: number;
}

/**
 * A webhook receiver on 127.0.0.1 (a free port): /ok answers 200, /down 500, /busy 429 with
 * `Retry-After: 3` the first time and 200 after, /hang never answers (the request stays open until
 * cts gives up on it, or the receiver stops).
 */
async function startReceiver(): Promise<{ url: string; got: Received[]; open: () => number; stop(): Promise<void> }> {
  const got: Received[] = [];
  const hanging = new Set<ServerResponse>();
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      got.push({ path: req.url ?? "", headers: req.headers, body: Buffer.concat(chunks), at: Date.now() });
      if (req.url === "/hang") {
        hanging.add(res);
        res.on("close", () => hanging.delete(res));
        return;
      }
      if (req.url === "/busy" && got.filter((g) => g.path === "/busy").length === 1) return void res.writeHead(429, { "retry-after": "3" }).end();
      res.writeHead(req.url === "/down" ? 500 : 200).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    got,
    open: () => hanging.size,
    async stop() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

describe("notifications (real Consul, real OpenTofu, a real HTTP receiver)", () => {
  const SECRET = `ntfy-${Math.random().toString(36).slice(2)}-secret`;
  const HOOK_KEY = `hook-key-${Math.random().toString(36).slice(2)}`;
  let consul: ConsulAgent;
  let tmp: { dir: string; cleanup(): Promise<void> };
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  let daemon: Daemon | undefined;
  const lines: string[] = [];

  before(async () => {
    consul = await startConsul({ extraConfig: 'session_ttl_min = "1s"' });
    tmp = await tempDir();
    receiver = await startReceiver();
    await consul.register({ Name: "web", ID: "web-1", Address: "10.0.0.1", Port: 80 });
    process.env.CTS_TEST_NOTIFY_SECRET = SECRET;
    process.env.CTS_TEST_HOOK_KEY = HOOK_KEY;
  });
  after(async () => {
    await daemon?.stop();
    await receiver?.stop();
    await consul?.stop();
    await tmp?.cleanup();
    delete process.env.CTS_TEST_NOTIFY_SECRET;
    delete process.env.CTS_TEST_HOOK_KEY;
  });

  const bodies = (path: string) => receiver.got.filter((g) => g.path === path);
  const parsed = (path: string) => bodies(path).map((g) => JSON.parse(g.body.toString("utf8")) as Notification);
  const metric = async (name: string, labels: Record<string, string>) => sampleValue(parseMetrics((await daemon!.runtime.metrics.scrape()).body), name, labels);

  it("a failed run and its recovery each deliver a signed notification; a hanging or failing receiver delays no run, is retried, then given up; no task secret reaches a body", async () => {
    // While this path is a regular file the task's apply fails, and Terraform's error names the path (with the secret in it).
    const blocked = join(tmp.dir, `blocked-${SECRET}`);
    await writeFile(blocked, "a file, not a folder\n");
    const t = tools();
    const config = join(tmp.dir, "cts.config.ts");
    await writeFile(
      config,
      `import { defineConfig } from ${JSON.stringify(PUBLIC_API)};
import { SecretPathMembers } from ${JSON.stringify(FIXTURE)};
export default defineConfig({
  consul: { address: ${JSON.stringify(consul.address)} },
  driver: { terraform: { binary: ${JSON.stringify(t.tofu)}, cliConfigFile: ${JSON.stringify(t.cliConfig)}, workingDir: ${JSON.stringify(join(tmp.dir, "sync-tasks"))} } },
  bufferPeriod: false,
  api: { port: 0 },
  notifications: {
    webhooks: [
      { name: "ok", url: ${JSON.stringify(receiver.url + "/ok")}, secretEnv: "CTS_TEST_HOOK_KEY", events: ["failed", "recovered"] },
      { name: "slack", url: ${JSON.stringify(receiver.url + "/slack")}, format: "slack", events: ["failed"] },
      { name: "down", url: ${JSON.stringify(receiver.url + "/down")}, events: ["failed"], retries: 2 },
      { name: "busy", url: ${JSON.stringify(receiver.url + "/busy")}, events: ["failed"], retries: 2 },
      { name: "hang", url: ${JSON.stringify(receiver.url + "/hang")}, events: ["failed"], timeout: "30s", retries: 1 },
    ],
  },
  tasks: [new SecretPathMembers("flaky", ${JSON.stringify(blocked)})],
});
`,
    );
    const loaded = await loadConfig(config);
    const log = createLogger({ level: "debug", write: (l) => lines.push(l) });
    daemon = await startDaemon(loaded, { log, synthesizer: inProcessSynthesizer((n) => loaded.config.tasks.find((x) => x.name === n)) });
    const events = () => daemon!.runtime.controller.events.list("flaky");

    // 1. The first run fails: every webhook that asked for "failed" is sent one.
    await waitFor(() => events().length >= 1, 120_000, "the first run of flaky");
    assert.equal(events()[0]!.outcome, "failed");
    assert.match(events()[0]!.error!.message, /\[redacted\]/, "Terraform's error named the secret path (redacted in the event)");
    const failed = (await waitFor(() => parsed("/ok").find((n) => n.kind === "failed"), 30_000, "the failed notification at /ok"))!;
    await waitFor(() => bodies("/hang").length >= 1, 30_000, "the first attempt at /hang");

    // 2. A change while /hang holds its request open and /down keeps answering 500: the next run
    //    starts and ends all the same (its event is recorded before the hanging delivery ends).
    await consul.register({ Name: "web", ID: "web-2", Address: "10.0.0.2", Port: 80 });
    await waitFor(() => events().length >= 2, 120_000, "the second run of flaky");
    assert.equal(await metric("cts_notifications_failed_total", { webhook: "hang", kind: "failed" }), 0, "the hanging delivery had not ended when the run did");

    // 3. The folder can be written again: the next run applies, and /ok hears of the recovery.
    await rm(blocked);
    await consul.register({ Name: "web", ID: "web-3", Address: "10.0.0.3", Port: 80 });
    const recovered = (await waitFor(() => parsed("/ok").find((n) => n.kind === "recovered"), 120_000, "the recovered notification at /ok"))!;
    assert.equal(events()[0]!.outcome, "applied");

    // Both verify with the key, over the raw bytes received.
    for (const g of bodies("/ok")) assert.equal(verifySignature(g.body, g.headers["x-cts-signature-256"] as string, HOOK_KEY), true, "the signature verifies");
    for (const n of [failed, recovered]) {
      assert.equal(n.version, 1);
      assert.equal(n.task, "flaky");
      assert.equal(n.links?.status, `${daemon.apiUrl}/v1/status/tasks/flaky`);
      assert.ok(events().some((e) => e.id === n.detail.event_id), "it names the task's event");
    }
    assert.equal(failed.detail.outcome, "failed");
    assert.equal(recovered.detail.outcome, "applied");
    const slack = JSON.parse(bodies("/slack")[0]!.body.toString("utf8")) as { text: string; blocks: unknown[] };
    assert.match(slack.text, /^Task failed: Task 'flaky' failed: /);
    assert.ok(Array.isArray(slack.blocks));
    assert.equal(bodies("/slack")[0]!.headers["x-cts-signature-256"], undefined, "no key, no signature");

    // /down: tried three times (1 + 2 retries) per failed run, then given up; the metrics show it.
    await waitFor(async () => (await metric("cts_notifications_failed_total", { webhook: "down", kind: "failed" })) >= 2, 60_000, "both /down deliveries given up");
    assert.equal(bodies("/down").length >= 6, true, `three attempts each (got ${bodies("/down").length})`);
    assert.equal(await metric("cts_notifications_delivered_total", { webhook: "down", kind: "failed" }), 0);
    // /busy: its 429 asked for 3 s (the backoff alone would have waited about 1 s); the retry came after them and was taken.
    await waitFor(async () => (await metric("cts_notifications_delivered_total", { webhook: "busy", kind: "failed" })) >= 1, 60_000, "the /busy delivery");
    const [first, second] = bodies("/busy");
    assert.ok(second!.at - first!.at >= 2_900, `waited as Retry-After asked (${second!.at - first!.at} ms)`);
    assert.equal(second!.headers["x-cts-delivery"], first!.headers["x-cts-delivery"], "the same delivery, tried again");
    // /hang: each attempt cut off after 30 s, retried once, then given up.
    await waitFor(async () => (await metric("cts_notifications_failed_total", { webhook: "hang", kind: "failed" })) >= 1, 150_000, "the first /hang delivery given up");
    assert.ok((await metric("cts_notification_attempt_duration_seconds", { webhook: "hang", result: "timeout" })) >= 2, "two attempts, each cut off");
    assert.equal(await metric("cts_notifications_delivered_total", { webhook: "ok", kind: "recovered" }), 1);
    assert.equal(await metric("cts_notifications_delivered_total", { webhook: "ok", kind: "failed" }), 2, "one per failed run");

    // The secret was in Terraform's error; it reached no body, header, or log line, and neither did the webhook key.
    for (const g of receiver.got) {
      assert.ok(!g.body.includes(SECRET), `no task secret in a body sent to ${g.path}`);
      assert.ok(!JSON.stringify(g.headers).includes(SECRET));
      assert.ok(!g.body.includes(HOOK_KEY));
    }
    assert.ok(!lines.join("\n").includes(SECRET), "nor in the log");
    assert.ok(!lines.join("\n").includes(HOOK_KEY), "nor the webhook key");
    assert.ok(lines.some((l) => /webhook 'down': gave up the failed notification of task 'flaky' after 3 attempt\(s\): HTTP 500/.test(l)), "the give-up is logged");
  });

  it("a leadership change is told by the instance that becomes the leader", async () => {
    const ha = (id: string) =>
      writeHaConfig(join(tmp.dir, id), {
        consulAddress: consul.address,
        id,
        cluster: "notify",
        sessionTtl: "3s",
        tasks: [`new MemberList("members", ${JSON.stringify(join(tmp.dir, id, "members.txt"))})`],
        extra: `notifications: { webhooks: [{ name: "leaders", url: ${JSON.stringify(receiver.url + "/leaders")}, events: ["leader_changed"], secretEnv: "CTS_TEST_HOOK_KEY" }] },`,
      });
    const start = async (id: string) => {
      const loaded = await loadConfig(await ha(id));
      const log = createLogger({ level: "info", write: (l) => lines.push(l) });
      return startDaemon(loaded, { log, synthesizer: inProcessSynthesizer((n) => loaded.config.tasks.find((x) => x.name === n)) });
    };
    const leaders = () => parsed("/leaders").filter((n) => n.detail.leader === true);
    const a = await start("cts-notify-a");
    let b: Daemon | undefined;
    let aStopped = false;
    try {
      await waitFor(() => leaders().some((n) => n.instance === "cts-notify-a"), 60_000, "cts-notify-a told it leads");
      b = await start("cts-notify-b");
      // A graceful stop releases the lock at once: B takes it and says so.
      await a.stop();
      aStopped = true;
      const told = (await waitFor(() => leaders().find((n) => n.instance === "cts-notify-b"), 60_000, "cts-notify-b told it leads"))!;
      assert.equal(told.kind, "leader_changed");
      assert.equal(told.task, null);
      assert.equal(told.links?.status, `${b.apiUrl}/v1/status`);
      assert.match(told.summary, /cts instance 'cts-notify-b' became the high-availability leader/);
      for (const g of bodies("/leaders")) assert.equal(verifySignature(g.body, g.headers["x-cts-signature-256"] as string, HOOK_KEY), true);
      assert.equal(leaders().filter((n) => n.instance === "cts-notify-a").length, 1, "told once by each new leader");
    } finally {
      if (!aStopped) await a.stop();
      await b?.stop();
    }
  });
});
