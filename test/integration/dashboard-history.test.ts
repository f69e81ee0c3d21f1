import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { access, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium, type Browser, type Page } from "playwright-core";
import { startDaemonApi } from "../../src/daemon/api.ts";
import { startConsul, type ConsulAgent } from "../support/consul.ts";
import { PUBLIC_API, startRuntime, tempDir, waitFor, type TestRuntime } from "../support/cts.ts";
import { http } from "../support/api.ts";
import { tools } from "../support/tools.ts";
import { POOL_TOKEN } from "../fixtures/output-tasks.ts";

const OUTPUT_TASKS = fileURLToPath(new URL("../fixtures/output-tasks.ts", import.meta.url));
const read = (p: string) => readFile(p, "utf8").catch(() => "");

/** The browser scripts/browser.sh installs; missing is a failure, never a skip. */
async function chromiumPath(): Promise<string> {
  const bin = process.env.CTS_CHROMIUM_BIN || "/usr/bin/chromium";
  await access(bin).catch(() => {
    throw new Error(`Chromium is not installed at ${bin}: run 'bash scripts/browser.sh' (npm test does) or 'apt-get install -y chromium', or set CTS_CHROMIUM_BIN.`);
  });
  return bin;
}

/** The dashboard shows a task's outputs (the sensitive one redacted) and its run history with each run's plan. */
describe("outputs and run history on the dashboard, in headless Chromium (real Consul, real OpenTofu)", () => {
  let consul: ConsulAgent;
  let tmp: { dir: string; cleanup(): Promise<void> };
  let rt: TestRuntime;
  let api: { url: string; stop: () => Promise<void> };
  let browser: Browser;
  let page: Page;
  let out: string;

  before(async () => {
    const executablePath = await chromiumPath();
    consul = await startConsul();
    tmp = await tempDir("cts-ui-history-");
    out = join(tmp.dir, "pool.txt");
    await consul.register({ Name: "web", ID: "web-1", Address: "10.0.0.1", Port: 80 });
    const t = tools();
    const file = join(tmp.dir, "cts.config.ts");
    await writeFile(
      file,
      `import { defineConfig } from ${JSON.stringify(PUBLIC_API)};
import { PoolOutputs } from ${JSON.stringify(OUTPUT_TASKS)};
export default defineConfig({
  consul: { address: ${JSON.stringify(consul.address)} },
  driver: { terraform: { binary: ${JSON.stringify(t.tofu)}, cliConfigFile: ${JSON.stringify(t.cliConfig)}, workingDir: ${JSON.stringify(join(tmp.dir, "sync-tasks"))} } },
  api: { port: 0 },
  tasks: [new PoolOutputs("pool", ${JSON.stringify(out)})],
});
`,
    );
    rt = await startRuntime(file);
    api = await startDaemonApi(rt, { port: 0 }, { register: false });
    await waitFor(async () => (await read(out)).includes("web-1"), 60_000, "the first apply");
    await consul.register({ Name: "web", ID: "web-2", Address: "10.0.0.2", Port: 80 });
    await waitFor(async () => (await http(api.url, "GET", "/v1/tasks/pool/runs")).body.total === 2, 60_000, "the second run");
    browser = await chromium.launch({ executablePath, args: ["--no-sandbox", "--disable-gpu"] });
    page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    await page.route(/.*/, (route) => (route.request().url().startsWith(api.url) ? route.continue() : route.abort()));
  });
  after(async () => {
    await browser?.close();
    await api?.stop();
    await rt?.close();
    await consul?.stop();
    await tmp?.cleanup();
  });

  it("shows the task's outputs under its events, the sensitive one as (sensitive)", async () => {
    await page.goto(`${api.url}/ui`);
    await page.locator('details[data-task="pool"] > summary').click();
    const outputs = page.locator('details[data-task="pool"] .outputs');
    await outputs.locator('tr[data-output="member_count"]').waitFor();
    assert.match(await outputs.locator('tr[data-output="member_count"]').innerText(), /member_count\s+2/);
    assert.match(await outputs.locator('tr[data-output="api_token"]').innerText(), /\(sensitive\)\s+sensitive/);
    assert.ok(!(await page.content()).includes(POOL_TOKEN));
  });

  it("loads the task's history when opened, each run with its trigger, outcome and plan by address", async () => {
    const history = page.locator('details[data-history="pool"]');
    assert.match(await history.locator("> summary").innerText(), /History \(2 runs kept\)/);
    await history.locator("> summary").click();
    await history.locator("details.run").nth(1).waitFor();
    const [newest, first] = [history.locator("details.run").nth(0), history.locator("details.run").nth(1)];
    assert.match(await newest.locator("summary").innerText(), /applied · change · .* \+1 ~0 -1/);
    assert.match(await first.locator("summary").innerText(), /applied · start · .* \+1 ~0 -0/);
    await newest.locator("summary").click();
    assert.match(await newest.locator(".resources").innerText(), /-\/\+ local_file\.members \(replace\)/);
  });

  it("reads an open history again when a run ends", async () => {
    await http(api.url, "PATCH", "/v1/tasks/pool?run=now&force=true", { enabled: true });
    const history = page.locator('details[data-history="pool"]');
    await waitFor(async () => (await history.locator("details.run").count()) === 3, 30_000, "the third run on the page");
    assert.match(await history.locator("details.run").nth(0).locator("summary").innerText(), /applied · api/);
  });
});
