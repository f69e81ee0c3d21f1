import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { readdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { gunzipSync, gzipSync } from "node:zlib";
import { startConsul, type ConsulAgent } from "../support/consul.ts";
import { FIXTURE_TASKS, tempDir, waitFor, writeConfig } from "../support/cts.ts";
import { startCtsProcess, type CtsProcess } from "../support/cts-process.ts";

const read = (p: string) => readFile(p, "utf8").catch(() => "");
const getJson = async (url: string) => (await fetch(url)).json() as Promise<any>;

/** CTS's default backend keeps workspace `<task>`'s state at this KV key. */
const STATE_KEY = "consul-terraform-sync/terraform-env:stall";

interface Event {
  success: boolean;
  outcome?: string;
  error: { message: string } | null;
  state_not_saved?: string;
  outside_state?: Array<{ address: string; id?: string }>;
}

/**
 * What cannot be fenced is detected (issue #36 item 1): another writer changes the task's state
 * in Consul while cts's apply runs (what a second Terraform does after a stall), so OpenTofu's
 * state save fails (`consul CAS failed … index is stale`) and what the apply made is in no state.
 * Real cts watch, OpenTofu with the consul backend, a real Consul agent.
 */
describe("an apply whose state save fails (real cts watch, OpenTofu, Consul)", () => {
  let consul: ConsulAgent;
  let tmp: { dir: string; cleanup(): Promise<void> };
  let cts: CtsProcess;
  let url = "";
  let members: string;
  let marks: string;

  before(async () => {
    consul = await startConsul();
    tmp = await tempDir("cts-not-saved-");
    members = join(tmp.dir, "members.txt");
    marks = join(tmp.dir, "marks.txt");
    await consul.register({ Name: "web", ID: "web-1", Address: "10.0.0.1", Port: 80 });
    const config = await writeConfig(tmp.dir, {
      consulAddress: consul.address,
      extra: `id: "not-saved-cts",`,
      tasks: [],
    });
    // StallableMembers is not among writeConfig's imports: add it.
    const text = (await read(config))
      .replace(/^(import \{ MemberList)/m, `import { StallableMembers } from ${JSON.stringify(FIXTURE_TASKS)};\n$1`)
      .replace("tasks: [],", `tasks: [new StallableMembers("stall", ${JSON.stringify(members)}, ${JSON.stringify(marks)}, 8)],`);
    await writeFile(config, text);
    cts = startCtsProcess(config, { name: "cts" });
    url = (await cts.waitForLine(/api: listening on (\S+)/, 120_000)).line.match(/listening on (\S+)/)![1]!;
    await waitFor(async () => (await read(members)) === "web-1 10.0.0.1:80\n", 120_000, "the first apply");
  });
  after(async () => {
    await cts?.terminate(15_000);
    await consul?.stop();
    await tmp?.cleanup();
  });

  it("fails the attempt with TERRAFORM_STATE_NOT_SAVED, applies again, and its event, log and metrics name what is outside the saved state", async () => {
    const mark = cts.mark();
    await consul.register({ Name: "web", ID: "web-2", Address: "10.0.0.2", Port: 80 });
    await waitFor(async () => (await read(marks)).includes("start"), 120_000, "the apply to reach its slow step");

    // Another writer stores the state again (one serial on, as a second Terraform would): its index
    // moves, and OpenTofu's check-and-set of the apply's state fails.
    const raw = Buffer.from(await (await fetch(`http://${consul.address}/v1/kv/${STATE_KEY}?raw`)).arrayBuffer());
    assert.ok(raw.length > 0, "the task's state is in Consul");
    const state = JSON.parse(gunzipSync(raw).toString("utf8")) as { serial: number };
    state.serial++;
    const indexOf = async () => ((await (await fetch(`http://${consul.address}/v1/kv/${STATE_KEY}`)).json()) as Array<{ ModifyIndex: number }>)[0]!.ModifyIndex;
    const before = await indexOf();
    assert.equal((await fetch(`http://${consul.address}/v1/kv/${STATE_KEY}`, { method: "PUT", body: gzipSync(JSON.stringify(state)) })).status, 200);
    assert.ok((await indexOf()) > before, "the state's index moved");

    await cts.waitForLine(/attempt 1 failed \(TERRAFORM_STATE_NOT_SAVED\)/, 120_000, mark);
    await waitFor(async () => (await read(members)) === "web-1 10.0.0.1:80\nweb-2 10.0.0.2:80\n", 120_000, "the retried apply");

    // The run's event: a success that says what the failed save left outside the state.
    const found = await waitFor(async () => {
      const events = (await getJson(`${url}/v1/status/tasks/stall?include=events`)).stall.events as Event[];
      return events.find((e) => e.state_not_saved);
    }, 60_000, "an event with state_not_saved");
    const event = found!;
    assert.equal(event.success, true);
    assert.match(event.state_not_saved!, /could not save its state or lost its state lock \("(Failed to save state|consul CAS failed)"\)/);
    assert.match(event.state_not_saved!, /errored-.*\.tfstate/);
    // The failed apply had made a new terraform_data.slow; the retry made another: the first one is in no state.
    assert.equal(event.outside_state?.length, 1, JSON.stringify(event.outside_state));
    assert.equal(event.outside_state![0]!.address, "terraform_data.slow");
    assert.ok(event.outside_state![0]!.id, "named by its id");

    const logs = cts.logs().slice(mark);
    assert.match(logs, /\[ERROR\] .*task 'stall': .*could not save its state/);
    assert.match(logs, new RegExp(`\\[ERROR\\] .*task 'stall': applied again after an apply that could not save its state; outside the saved state: terraform_data\\.slow \\(id ${event.outside_state![0]!.id}\\)`));

    const metrics = await (await fetch(`${url}/metrics`)).text();
    assert.match(metrics, /^cts_task_state_not_saved_total\{task="stall"\} 1$/m);
    assert.match(metrics, /^cts_task_objects_outside_state_total\{task="stall"\} 1$/m);

    // What the failed apply had made is kept for the operator (tofu state push / import), out of Terraform's way.
    const kept = (await readdir(join(tmp.dir, "sync-tasks", "stall"))).filter((f) => /^errored/.test(f));
    assert.equal(kept.length, 1);
    assert.match(kept[0]!, /^errored-.*\.tfstate$/);
    assert.ok(cts.running(), "the daemon keeps running");
  });
});
