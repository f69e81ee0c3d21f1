import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { readdir } from "node:fs/promises";
import { join } from "node:path";
import { startConsul, type ConsulAgent } from "../support/consul.ts";
import { tempDir, waitFor } from "../support/cts.ts";
import { http } from "../support/api.ts";
import { freePort } from "../support/ports.ts";
import { CTS_BIN, startCtsProcess, writeHaConfig, type CtsProcess } from "../support/cts-process.ts";
import { constructId } from "../../src/index.ts";
import { execFile } from "node:child_process";

const CLUSTER = "shared-approve";

/**
 * Shared mode: a plan held by the task's owner, approved or rejected through the other member.
 */
describe("shared mode: approve/reject of a held plan sent to a member that does not own the task (real Consul, real OpenTofu, two cts processes)", () => {
  let consul: ConsulAgent;
  let tmp: { dir: string; cleanup(): Promise<void> };
  const procs = new Map<string, CtsProcess>();
  const urls = new Map<string, string>();
  let pool: string;

  const files = async () => (await readdir(pool).catch(() => [] as string[])).sort();
  const named = (...ids: string[]) => ids.map((id) => `${constructId(id)}.txt`).sort();
  const api = (id: string, method: string, path: string, body?: unknown) => http(urls.get(id)!, method, path, body);
  const held = async (id: string) => (await api(id, "GET", "/v1/status/tasks/pool")).body.pool?.held;
  const cts = (args: string[]): Promise<{ code: number; stdout: string; stderr: string }> =>
    new Promise((resolve) => execFile(process.execPath, [CTS_BIN, ...args], (err, stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr })));

  before(async () => {
    consul = await startConsul({ extraConfig: 'session_ttl_min = "1s"' });
    tmp = await tempDir("cts-shared-approve-");
    pool = join(tmp.dir, "pool");
    for (const i of [1, 2, 3]) await consul.register({ Name: "web", ID: `web-${i}`, Address: `10.0.0.${i}`, Port: 80 });
    for (const id of ["cts-a", "cts-b"]) {
      const port = await freePort();
      urls.set(id, `http://127.0.0.1:${port}`);
      const file = await writeHaConfig(join(tmp.dir, id), {
        consulAddress: consul.address,
        id,
        cluster: CLUSTER,
        sessionTtl: "3s",
        mode: "shared",
        settle: "1s",
        apiPort: port,
        tasks: [`new GuardedPool("pool", ${JSON.stringify(pool)}, { maxDestroy: 0 })`],
      });
      procs.set(id, startCtsProcess(file, { name: id }));
    }
  });
  after(async () => {
    await Promise.all([...procs.values()].map((p) => p.terminate(15_000)));
    await consul?.stop();
    await tmp?.cleanup();
  });

  it("the owner (pinned: cts-a) holds the plan; the other member shows it too", async () => {
    await waitFor(async () => (await api("cts-b", "PATCH", "/v1/tasks/pool", { pin: "cts-a" })).status === 200, 90_000, "the pin to be stored");
    await waitFor(async () => {
      const res = await api("cts-b", "GET", "/v1/status/cluster");
      return res.status === 200 && (res.body.tasks_by_member?.["cts-a"] ?? []).includes("pool");
    }, 90_000, "cts-a to own pool");
    await waitFor(async () => JSON.stringify(await files()) === JSON.stringify(named("web-1", "web-2", "web-3")), 90_000, "the owner's first apply");
    await consul.deregister("web-3");
    await waitFor(() => held("cts-a"), 60_000, "the owner to hold the plan");
    const seen = await waitFor(() => held("cts-b"), 30_000, "the other member to show the hold");
    assert.deepEqual(seen.reasons, ["the plan destroys 1 resource, more than maxDestroy (0)"]);
  });

  it("approve or reject sent to the other member: 400 naming the owner and the command to send there; nothing is decided", async () => {
    const owner = urls.get("cts-a")!;
    for (const action of ["approve", "reject"] as const) {
      const res = await api("cts-b", "POST", `/v1/tasks/pool/${action}`, {});
      assert.equal(res.status, 400, res.text);
      const message = res.body.error.message as string;
      assert.match(message, new RegExp(`this instance does not run task 'pool'\\. Redirect the request to its owner: id=cts-a, address=${owner}\\.`));
      assert.ok(message.includes(`cts ${action} pool --http-addr ${owner} (POST ${owner}/v1/tasks/pool/${action})`), message);
      const cli = await cts([action, "pool", "--http-addr", urls.get("cts-b")!]);
      assert.notEqual(cli.code, 0);
      assert.ok(cli.stderr.includes(`cts ${action} pool --http-addr ${owner}`), cli.stderr);
    }
    assert.ok(await held("cts-a"), "still held on the owner");
    assert.deepEqual(await files(), named("web-1", "web-2", "web-3"), "nothing applied");
  });

  it("the command the answer names, run against the owner, applies exactly the held plan", async () => {
    const cli = await cts(["approve", "pool", "--http-addr", urls.get("cts-a")!]);
    assert.equal(cli.code, 0, cli.stderr);
    assert.match(cli.stdout, /task 'pool': applied \+0 ~0 -1/);
    assert.deepEqual(await files(), named("web-1", "web-2"));
    await waitFor(async () => (await held("cts-b")) === undefined, 30_000, "the other member to see the hold gone");
  });
});
