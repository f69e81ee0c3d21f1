import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { readFile, rm, stat } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import { startConsul, type ConsulAgent } from "../support/consul.ts";
import { tempDir, waitFor, writeConfig } from "../support/cts.ts";
import { CTS_BIN, startCtsProcess, type CtsProcess } from "../support/cts-process.ts";

const run = promisify(execFile);
const read = (p: string) => readFile(p, "utf8").catch(() => "");
const getJson = async (url: string) => (await fetch(url)).json() as Promise<any>;
const exists = (p: string) => stat(p).then(() => true, () => false);

/** CTS's default backend keeps workspace `<task>`'s state at this KV key. */
const stateKey = (task: string) => `consul-terraform-sync/terraform-env:${task}`;

/**
 * Lost Terraform state against a real `cts watch`, OpenTofu and Consul: the catalog data stays the
 * same, the state the task applied to goes away (deleted by hand, or a dev Consul restarted empty).
 * A run with the same inputs is not skipped then; it applies again and its event says why.
 */
describe("a lost Terraform state (real cts watch, OpenTofu, Consul)", () => {
  let consul: ConsulAgent;
  let tmp: { dir: string; cleanup(): Promise<void> };
  let cts: CtsProcess;
  let url = "";
  let web: string;
  let ghost: string;

  before(async () => {
    consul = await startConsul();
    tmp = await tempDir("cts-lost-state-");
    web = join(tmp.dir, "web.txt");
    ghost = join(tmp.dir, "ghost.txt");
    await consul.register({ Name: "web", ID: "web-1", Address: "10.0.0.1", Port: 80 });
    const config = await writeConfig(tmp.dir, {
      consulAddress: consul.address,
      extra: `id: "lost-state-cts",`,
      // "ghost" has no instance before and after a Consul restart: its data never changes.
      tasks: [`new MemberList("web", ${JSON.stringify(web)})`, `new MemberList("ghost", ${JSON.stringify(ghost)}, "ghost")`],
    });
    cts = startCtsProcess(config, { name: "cts" });
    url = (await cts.waitForLine(/api: listening on (\S+)/, 120_000)).line.match(/listening on (\S+)/)![1]!;
    await waitFor(async () => {
      const tasks = await getJson(`${url}/v1/status/tasks`);
      return tasks.web?.status === "successful" && tasks.ghost?.status === "successful";
    }, 120_000, "both first applies");
  });
  after(async () => {
    await cts?.terminate(15_000);
    await consul?.stop();
    await tmp?.cleanup();
  });

  const stateThere = (task: string) => consul.api("GET", `/v1/kv/${stateKey(task)}`).then(() => true, () => false);
  const patchRun = (task: string, query: string) =>
    fetch(`${url}/v1/tasks/${task}?${query}`, { method: "PATCH", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ enabled: true }) });
  const runOutcome = async (task: string) => ((await (await patchRun(task, "run=now")).json()) as { run: { outcome: string } }).run.outcome;

  it("a state deleted by hand: the next run with the same inputs applies again and says why; then it skips again", async () => {
    assert.equal(await runOutcome("web"), "no-op", "state there, inputs as applied: skipped");
    await consul.api("DELETE", `/v1/kv/${stateKey("web")}`);
    await rm(web, { force: true });
    const res = await patchRun("web", "run=now");
    assert.equal(res.status, 200, await res.clone().text());
    assert.match(await read(web), /web-1/, "applied again: the file is back");
    const events = (await getJson(`${url}/v1/status/tasks/web?include=events`)).web.events as Array<{ state_lost?: string }>;
    assert.match(events[0]!.state_lost ?? "", /is gone/);
    assert.ok(await stateThere("web"), "a new state is where the backend keeps it");
    await rm(web, { force: true });
    assert.equal(await runOutcome("web"), "no-op");
    assert.equal(await exists(web), false, "the state matches again: skipped (the file stays gone)");
  });

  it("`cts task run --force` applies whatever the skip would say", async () => {
    const { stdout } = await run(process.execPath, [CTS_BIN, "task", "run", "web", "--force", "--http-addr", url]);
    assert.match(stdout, /Task 'web' ran/);
    assert.match(await read(web), /web-1/, "applied although the inputs were the same");
    const bad = await patchRun("web", "force=true");
    assert.equal(bad.status, 400);
    assert.match(await bad.text(), /force=true needs run=now/);
  });

  it("a dev Consul restarted empty: once it answers again, the task whose state is gone applies again though its data did not change", async () => {
    const mark = cts.mark();
    await rm(ghost, { force: true });
    await consul.restart();
    await cts.waitForLine(/task 'ghost': its Terraform state is gone .*looked at after Consul (came back|restarted)/, 120_000, mark);
    await waitFor(async () => (await exists(ghost)) && (await stateThere("ghost")), 60_000, "ghost applied again: its (empty) file and a new state");
    // The run that applied it again says why (a later run of the same inputs, the watch's re-read after the restart, may be newer).
    await waitFor(
      async () => ((await getJson(`${url}/v1/status/tasks/ghost?include=events`)).ghost.events as Array<{ state_lost?: string }>).some((e) => (e.state_lost ?? "").includes("is gone")),
      60_000,
      "the event says why",
    );
  });
});
