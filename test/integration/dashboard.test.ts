import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { access, mkdir, readdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium, type Browser, type Page } from "playwright-core";
import { startDaemonApi } from "../../src/daemon/api.ts";
import { startConsul, type ConsulAgent } from "../support/consul.ts";
import { startRuntime, tempDir, waitFor, writeConfig, type TestRuntime } from "../support/cts.ts";
import { http, writeEchoModule } from "../support/api.ts";
const THROWING = fileURLToPath(new URL("../fixtures/throwing-tasks.ts", import.meta.url));

const ARTIFACTS = fileURLToPath(new URL("../artifacts/", import.meta.url));
const TOKEN = "dashboard-test-token";
const read = (p: string) => readFile(p, "utf8").catch(() => "");

/** The browser scripts/browser.sh installs; missing is a failure, never a skip. */
async function chromiumPath(): Promise<string> {
  const bin = process.env.CTS_CHROMIUM_BIN || "/usr/bin/chromium";
  await access(bin).catch(() => {
    throw new Error(`Chromium is not installed at ${bin}: run 'bash scripts/browser.sh' (npm test does) or 'apt-get install -y chromium', or set CTS_CHROMIUM_BIN.`);
  });
  return bin;
}

/**
 * The dashboard at /ui in headless Chromium against a daemon with real Consul and OpenTofu: it
 * lists the tasks, shows a run that happens while it is open (server-sent events, no reload), and
 * with the API token runs, disables and drift-checks tasks from the page.
 */
describe("the dashboard at /ui in headless Chromium (real Consul, real OpenTofu)", () => {
  let consul: ConsulAgent;
  let tmp: { dir: string; cleanup(): Promise<void> };
  let rt: TestRuntime;
  let api: { url: string; stop: () => Promise<void> };
  let browser: Browser;
  let page: Page;
  const row = (task: string) => page.locator(`tr[data-task="${task}"]`);

  before(async () => {
    const executablePath = await chromiumPath();
    consul = await startConsul();
    tmp = await tempDir();
    await writeEchoModule(tmp.dir);
    await consul.register({ Name: "web", ID: "web-1", Address: "10.0.0.1", Port: 80 });
    await consul.register({ Name: "api", ID: "api-1", Address: "10.0.1.1", Port: 8080 });
    const file = await writeConfig(tmp.dir, {
      consulAddress: consul.address,
      extra: `driftCheck: { every: "1h" },`,
      tasks: [
        `new MemberList("web-pool", ${JSON.stringify(join(tmp.dir, "web.txt"))})`,
        `new MemberList("api-pool", ${JSON.stringify(join(tmp.dir, "api.txt"))}, "api", false, { every: "30m", correct: true })`,
        // The echo module declares no consul_kv variable: this task fails, so the page shows an error.
        `new ThrowsInSynth("thrower")`,
        // approval: "always": its first plan is held until someone approves it on the page.
        `new GuardedPool("reviewed", ${JSON.stringify(join(tmp.dir, "reviewed"))}, undefined, "always", "web")`,
        `new ModuleTask({ name: "kv-echo", module: "./modules/echo", condition: services({ names: ["api"] }), inputs: { kv: consulKv({ path: "cfg/", recurse: true }) }, variables: { path: ${JSON.stringify(join(tmp.dir, "kv.txt"))} }, bufferPeriod: false })`,
      ],
    });
    // A task class that throws: the page must point at the user's file:line:column.
    await writeFile(file, `import { ThrowsInSynth } from ${JSON.stringify(THROWING)};\n${await readFile(file, "utf8")}`);
    rt = await startRuntime(file);
    api = await startDaemonApi(rt, { port: 0, token: TOKEN }, { register: false });
    await waitFor(async () => (await read(join(tmp.dir, "web.txt"))).includes("web-1"), 60_000, "the first apply");
    await rt.controller.idle();
    browser = await chromium.launch({ executablePath, args: ["--no-sandbox", "--disable-gpu"] });
    page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    // Offline: the page may reach nothing but this API.
    await page.route(/.*/, (route) => (route.request().url().startsWith(api.url) ? route.continue() : route.abort()));
  });
  after(async () => {
    await browser?.close();
    await api?.stop();
    await rt?.close();
    await consul?.stop();
    await tmp?.cleanup();
  });

  it("lists every task with its status, last run and drift settings", async (t) => {
    const foreign: string[] = [];
    page.on("request", (r) => {
      if (!r.url().startsWith(api.url)) foreign.push(r.url());
    });
    await page.goto(`${api.url}/ui`);
    await row("web-pool").waitFor();
    const paint = (await page.evaluate(`performance.getEntriesByName("first-contentful-paint")[0]?.startTime`)) as number | undefined;
    t.diagnostic(`first contentful paint: ${paint?.toFixed(0)} ms`);
    await page.locator("#live.on").waitFor();
    assert.match(await row("web-pool").locator(".status").innerText(), /successful/);
    assert.match(await row("web-pool").locator(".last-run").innerText(), /applied/);
    assert.match(await row("api-pool").locator(".drift-cell").innerText(), /every 30m, corrects/);
    assert.match(await row("web-pool").locator(".drift-cell").innerText(), /every 1h/);
    assert.match(await row("kv-echo").locator(".status").innerText(), /errored/);
    await page.locator('details[data-task="kv-echo"] summary').click();
    assert.match(await page.locator('details[data-task="kv-echo"] .err').first().innerText(), /consul_kv/);
    assert.match(await row("thrower").locator(".status").innerText(), /errored/);
    await page.locator('details[data-task="thrower"] summary').click();
    assert.match(await page.locator('details[data-task="thrower"] .err').first().innerText(), /throwing-tasks\.ts:15:33/);
    const graph = await page.locator("#graph svg").innerHTML();
    for (const s of ["service  web", "service  api", "kv  cfg/ (recursive)", "web-pool", "kv-echo"]) assert.ok(graph.includes(s), `graph shows ${s}`);
    assert.deepEqual(foreign, [], "no request left the API");
  });

  it("paints the tasks at once: the page arrives with its state, before any script or /ui/state answer", async () => {
    // No JavaScript at all: what shows is what the server rendered into the page.
    const context = await browser.newContext({ javaScriptEnabled: false });
    try {
      const bare = await context.newPage();
      await bare.goto(`${api.url}/ui`);
      const cell = (task: string, c: string) => bare.locator(`tr[data-task="${task}"] .${c}`).innerText();
      assert.match(await cell("web-pool", "status"), /successful/);
      assert.match(await cell("web-pool", "last-run"), /applied/);
      assert.match(await cell("kv-echo", "status"), /errored/);
      assert.match(await bare.locator("#summary").innerText(), /^5 tasks · /);
      assert.equal(await bare.locator("text=loading…").count(), 0);
    } finally {
      await context.close();
    }
  });

  it("shows a run that happens while the page is open, without a reload", async () => {
    await page.evaluate("window.marker = 42");
    const before = await row("web-pool").getAttribute("data-event");
    await consul.register({ Name: "web", ID: "web-2", Address: "10.0.0.2", Port: 80 });
    await page.waitForFunction(
      (id) => {
        // Runs in the page (the project's TypeScript has no DOM types, hence the casts).
        const r = (globalThis as any).document.querySelector('tr[data-task="web-pool"]');
        return r !== null && r.getAttribute("data-event") !== id && r.getAttribute("data-running") === "false";
      },
      before,
      { timeout: 60_000 },
    );
    assert.match(await read(join(tmp.dir, "web.txt")), /web-2/);
    assert.match(await row("web-pool").locator(".last-run").innerText(), /applied\s+\+1 ~0 -1/);
    // The run's event names what it changed by address (textContent: the event list is collapsed).
    assert.match((await page.locator('details[data-task="web-pool"] .event .resources').first().textContent()) ?? "", /^-\/\+ local_file\.\S+ \(replace\)$/);
    assert.equal(await page.evaluate("window.marker"), 42, "the page was not reloaded");
    await mkdir(ARTIFACTS, { recursive: true });
    await page.screenshot({ path: join(ARTIFACTS, "dashboard.png"), fullPage: true });
  });

  it("keeps the buttons off without the token, and with it runs a drift check and disables a task", async () => {
    assert.equal(await row("web-pool").locator('[data-action="drift"]').isDisabled(), true, "read-only without the token");
    await page.fill("#token", "wrong-token");
    await page.click('#token-form button[type="submit"]');
    await row("web-pool").locator('[data-action="drift"]').click();
    await page.locator("#notice", { hasText: /not valid/ }).waitFor();
    await page.fill("#token", TOKEN);
    await page.click('#token-form button[type="submit"]');
    await row("api-pool").locator('[data-action="drift"]').click();
    await page.locator("#notice", { hasText: /in-sync/ }).waitFor({ timeout: 60_000 });
    await page.locator('tr[data-task="api-pool"] .drift-cell', { hasText: "in-sync" }).waitFor();
    // Changed out of band: the page's drift check finds it.
    await writeFile(join(tmp.dir, "web.txt"), "changed by hand\n");
    await row("web-pool").locator('[data-action="drift"]').click();
    await page.locator("#notice", { hasText: /drifted/ }).waitFor({ timeout: 60_000 });
    await page.locator('tr[data-task="web-pool"] .drift-cell', { hasText: "drifted" }).waitFor();
    await page.locator('details[data-task="web-pool"] summary').click();
    await page.locator('details[data-task="web-pool"] .event', { hasText: "not corrected" }).waitFor();
    await row("kv-echo").locator('[data-action="toggle"]').click();
    await page.locator('tr[data-task="kv-echo"] .status', { hasText: "disabled" }).waitFor();
    assert.equal((await http(api.url, "GET", "/v1/tasks/kv-echo")).body.task.enabled, false);
    await page.screenshot({ path: join(ARTIFACTS, "dashboard-drift.png"), fullPage: true });
  });

  it("shows a held plan with its reasons, applies it with Approve and discards the next one with Reject", async () => {
    // The token was entered in the test before (sessionStorage keeps it for the tab).
    // One file per web instance (web-2 came in a test before): the plan creates them both.
    await page.locator('tr[data-task="reviewed"] .held-box', { hasText: /held\s+\+2 ~0 -0/ }).waitFor({ timeout: 60_000 });
    assert.match(await row("reviewed").locator(".held-box").innerText(), /approval is "always"/);
    await row("reviewed").locator('[data-action="approve"]').click();
    await page.locator("#notice", { hasText: /Approve reviewed: applied \+2 ~0 -0/ }).waitFor({ timeout: 60_000 });
    await page.locator('tr[data-task="reviewed"] [data-action="approve"]').waitFor({ state: "detached" });
    assert.equal((await readdir(join(tmp.dir, "reviewed"))).length, 2, "the held plan was applied");
    await consul.register({ Name: "web", ID: "web-3", Address: "10.0.0.3", Port: 80 });
    await page.locator('tr[data-task="reviewed"] .held-box', { hasText: /\+1 ~0 -0/ }).waitFor({ timeout: 60_000 });
    await row("reviewed").locator('[data-action="reject"]').click();
    await page.locator("#notice", { hasText: /Reject reviewed: discarded \+1 ~0 -0/ }).waitFor({ timeout: 60_000 });
    await page.locator('tr[data-task="reviewed"] .last-run', { hasText: "rejected" }).waitFor();
    assert.equal((await readdir(join(tmp.dir, "reviewed"))).length, 2, "nothing was applied");
    await page.screenshot({ path: join(ARTIFACTS, "dashboard-held.png"), fullPage: true });
  });

  it("serves the page with a strict Content-Security-Policy and refuses it through a foreign Host", async () => {
    const res = await http(api.url, "GET", "/ui/");
    assert.equal(res.status, 200);
    assert.match(String(res.headers["content-security-policy"]), /default-src 'none'; script-src 'self'/);
    assert.equal((await http(api.url, "GET", "/ui/", undefined, { host: `evil.example:${new URL(api.url).port}` })).status, 421);
    const post = await http(api.url, "POST", "/v1/tasks/web-pool/drift", {}, { origin: "http://evil.example", authorization: `Bearer ${TOKEN}` });
    assert.equal(post.status, 403, "another origin still may not change tasks");
  });

  it("says Consul is unreachable (a banner with since and the reason, statuses unknown and stale) and drops it when Consul is back, without a reload", async () => {
    await page.goto(`${api.url}/ui`);
    await page.locator("#live.on").waitFor();
    await page.evaluate("window.marker = 7");
    assert.equal(await page.locator("#consul-banner").isHidden(), true, "no banner while Consul answers");
    await consul.halt();
    try {
      // Told by the server-sent events (Consul lost), not by a reload.
      await page.locator("#consul-banner", { hasText: /Consul unreachable since/ }).waitFor({ timeout: 60_000 });
      assert.match(await page.locator("#consul-banner").innerText(), /Cannot reach Consul/);
      await page.locator('tr[data-task="web-pool"] .status', { hasText: /unknown/ }).waitFor({ timeout: 60_000 });
      assert.match(await row("web-pool").locator(".status").innerText(), /unknown\s+stale[\s\S]*last: successful/);
      assert.match(await page.locator("#summary").innerText(), /unknown/);
      await page.screenshot({ path: join(ARTIFACTS, "dashboard-consul-unreachable.png"), fullPage: true });
    } finally {
      await consul.resume();
    }
    await page.locator("#consul-banner").waitFor({ state: "hidden", timeout: 60_000 });
    await page.waitForFunction(() => (globalThis as any).document.querySelector('tr[data-task="web-pool"] .pill.stale') === null, undefined, { timeout: 60_000 });
    assert.equal(await page.evaluate("window.marker"), 7, "the page was not reloaded");
  });
});

