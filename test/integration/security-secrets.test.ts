import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { readFile, readdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { startConsul, type ConsulAgent } from "../support/consul.ts";
import { startRuntime, tempDir, writeConfig } from "../support/cts.ts";
import { startDaemonApi } from "../../src/daemon/api.ts";

async function grepTree(dir: string, needle: string): Promise<string[]> {
  const hits: string[] = [];
  for (const e of await readdir(dir, { withFileTypes: true, recursive: true })) {
    if (!e.isFile()) continue;
    const p = join(e.parentPath ?? (e as unknown as { path: string }).path, e.name);
    // Live process records (.cts-processes) come and go while warm providers start and stop.
    const text = await readFile(p).catch(() => undefined);
    if (text?.includes(needle)) hits.push(p);
  }
  return hits;
}

describe("provider secrets", () => {
  const SECRET = `s3cr3t-${Date.now()}-value`;
  let consul: ConsulAgent;
  let tmp: { dir: string; cleanup(): Promise<void> };

  before(async () => {
    consul = await startConsul();
    tmp = await tempDir();
    await consul.register({ Name: "web", ID: "web-1", Address: "10.0.0.1", Port: 80 });
  });
  after(async () => {
    await consul?.stop();
    await tmp?.cleanup();
  });

  it("reach Terraform from the environment or a file, and never the working dir, logs or events", async () => {
    process.env.CTS_TEST_API_KEY = SECRET;
    const secretFile = join(tmp.dir, "key.txt");
    await writeFile(secretFile, SECRET + "-file\n");
    const file = await writeConfig(tmp.dir, {
      consulAddress: consul.address,
      tasks: [
        `new SecretUser("from-env", ${JSON.stringify(join(tmp.dir, "a.txt"))}, { env: "CTS_TEST_API_KEY" })`,
        `new SecretUser("from-file", ${JSON.stringify(join(tmp.dir, "b.txt"))}, { file: ${JSON.stringify(secretFile)} })`,
      ],
    });
    const rt = await startRuntime(file, { mode: "once" });
    try {
      const results = await rt.controller.once();
      for (const r of results) assert.equal(r.ok, true, r.error?.message);
      const plans = await rt.controller.inspect();
      for (const p of plans) assert.ok(!p.result?.output.includes(SECRET), "not in plan output");
      // Terraform received the value: it is in the state (in Consul KV), as Terraform keeps it.
      const state = await consul.api("GET", "/v1/kv/consul-terraform-sync/terraform-env:from-env?raw");
      assert.ok(JSON.stringify(state).length > 0);
      assert.deepEqual(await grepTree(join(tmp.dir, "sync-tasks"), SECRET), [], "not in any working-dir file");
      assert.ok(!rt.lines.join("\n").includes(SECRET), "not in the logs");
      const events = JSON.stringify(["from-env", "from-file"].map((t) => rt.controller.events.list(t)));
      assert.ok(!events.includes(SECRET), "not in events");
      const api = await startDaemonApi(rt, { port: 0 }, { register: false });
      try {
        for (const path of ["/v1/status", "/v1/status/tasks?include=events", "/v1/tasks", "/v1/tasks/from-env", "/v1/tasks/from-file", "/v1/status/tasks/from-env?include=events"]) {
          const res = await fetch(api.url + path);
          const text = await res.text();
          assert.equal(res.status, 200, `${path}: ${text}`);
          assert.ok(!text.includes(SECRET), `not in the answer to ${path}`);
        }
        const inspect = await fetch(api.url + "/v1/tasks/from-env?run=inspect", { method: "PATCH", body: JSON.stringify({ enabled: true }), headers: { "content-type": "application/json" } });
        assert.ok(!(await inspect.text()).includes(SECRET), "not in an inspect answer");
      } finally {
        await api.stop();
      }
      const json = await readFile(join(tmp.dir, "sync-tasks", "from-env", "main.tf.json"), "utf8");
      assert.match(json, /"sensitive": true/);
    } finally {
      await rt.close();
      delete process.env.CTS_TEST_API_KEY;
    }
  });

  it("a missing secret fails the task with an error naming the variable to set", async () => {
    const file = await writeConfig(join(tmp.dir), {
      consulAddress: consul.address,
      tasks: [`new SecretUser("missing", ${JSON.stringify(join(tmp.dir, "c.txt"))}, { env: "CTS_TEST_NOT_SET" })`],
    });
    const rt = await startRuntime(file, { mode: "once" });
    try {
      const [r] = await rt.controller.once();
      assert.equal(r!.ok, false);
      assert.equal(r!.error!.code, "SECRET_MISSING");
      assert.match(r!.error!.message, /Task 'missing': secret 'api_key' reads the environment variable CTS_TEST_NOT_SET/);
    } finally {
      await rt.close();
    }
  });
});
