import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { startConsul, type ConsulAgent } from "../support/consul.ts";
import { PUBLIC_API, tempDir, waitFor } from "../support/cts.ts";
import { CTS_BIN, startCtsProcess, type CtsProcess } from "../support/cts-process.ts";
import { http } from "../support/api.ts";
import { tools } from "../support/tools.ts";

const run = promisify(execFile);
const SECRET_TASKS = fileURLToPath(new URL("../fixtures/secret-tasks.ts", import.meta.url));
const MARKER = "[redacted]";

/** Runs the cts CLI; resolves with its output whatever the exit code. */
async function cts(args: string[], env: Record<string, string>): Promise<{ code: number; out: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [CTS_BIN, ...args], { env: { ...process.env, ...env }, timeout: 240_000, maxBuffer: 16 * 1024 * 1024 });
    return { code: 0, out: stdout + stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof e.code === "number" ? e.code : -1, out: `${e.stdout ?? ""}${e.stderr ?? ""}` };
  }
}

/**
 * A provider error that quotes a task secret must not carry it anywhere cts shows or stores
 * things: events (API), Consul KV (high availability), `cts status --events`, `cts once`, logs.
 */
describe("a provider error quoting a task secret (real Consul, real OpenTofu, HA on)", () => {
  const SECRET = `leak-${process.pid}-${Date.now()}-k3y`;
  const env = { CTS_FAULT_API_KEY: SECRET };
  let consul: ConsulAgent;
  let tmp: { dir: string; cleanup(): Promise<void> };
  let daemon: CtsProcess | undefined;
  let apiUrl: string;

  const config = async (name: string, task: string, ha: boolean) => {
    const t = tools();
    const dir = join(tmp.dir, name);
    const out = join(dir, "out");
    // The directory named after the secret makes local_file's write fail with the secret in the error.
    await mkdir(join(out, SECRET), { recursive: true });
    const file = join(dir, "cts.config.ts");
    await writeFile(
      file,
      `import { defineConfig } from ${JSON.stringify(PUBLIC_API)};
import { SecretInError } from ${JSON.stringify(SECRET_TASKS)};
export default defineConfig({
  id: ${JSON.stringify(`cts-${name}`)},
  consul: { address: ${JSON.stringify(consul.address)} },
  driver: { terraform: { binary: ${JSON.stringify(t.tofu)}, cliConfigFile: ${JSON.stringify(t.cliConfig)}, workingDir: ${JSON.stringify(join(dir, "sync-tasks"))}, log: true } },
  api: { port: 0 },
  ${ha ? `highAvailability: { cluster: { name: "leaky", storage: { sessionTtl: "10s" } } },` : ""}
  tasks: [new SecretInError(${JSON.stringify(task)}, ${JSON.stringify(out)}, { env: "CTS_FAULT_API_KEY" })],
});
`,
    );
    return file;
  };

  before(async () => {
    consul = await startConsul();
    tmp = await tempDir();
    await consul.register({ Name: "web", ID: "web-1", Address: "10.0.0.1", Port: 80 });
    daemon = startCtsProcess(await config("daemon", "leaky", true), { name: "cts-leaky", env });
    const { line } = await daemon.waitForLine(/api: listening on/, 120_000);
    apiUrl = /listening on (\S+)/.exec(line)![1]!;
    await waitFor(
      async () => {
        const res = await http(apiUrl, "GET", "/v1/status/tasks/leaky?include=events");
        return res.body?.leaky?.events?.some((e: { success: boolean }) => !e.success);
      },
      180_000,
      "a failed run of 'leaky'",
    );
  });
  after(async () => {
    await daemon?.terminate();
    await consul?.stop();
    await tmp?.cleanup();
  });

  it("keeps the secret out of the events the API returns, and marks where it was", async () => {
    for (const path of ["/v1/status/tasks?include=events", "/v1/status/tasks/leaky?include=events", "/v1/tasks/leaky", "/v1/tasks"]) {
      const res = await http(apiUrl, "GET", path);
      assert.equal(res.status, 200, res.text);
      assert.ok(!res.text.includes(SECRET), `the secret is in the answer to ${path}: ${res.text}`);
    }
    const events = (await http(apiUrl, "GET", "/v1/status/tasks/leaky?include=events")).body.leaky.events as Array<{ error: { message: string } | null }>;
    const message = events.find((e) => e.error)!.error!.message;
    assert.ok(message.includes(`out/${MARKER}`), `the error names the redacted path: ${message}`);
  });

  it("keeps the secret out of everything stored in Consul KV (high-availability state included)", async () => {
    await waitFor(async () => ((await consul.api("GET", "/v1/kv/consul-terraform-sync/leaky/?keys")) as string[] | undefined)?.some((k) => k.includes("events/leaky")), 60_000, "the events stored in KV");
    const all = (await consul.api("GET", "/v1/kv/?recurse")) as Array<{ Key: string; Value: string | null }>;
    const decoded = all.map((kv) => ({ key: kv.Key, value: kv.Value ? Buffer.from(kv.Value, "base64").toString("utf8") : "" }));
    const leaks = decoded.filter((kv) => kv.key.includes(SECRET) || kv.value.includes(SECRET)).map((kv) => kv.key);
    assert.deepEqual(leaks, [], "KV entries holding the secret");
    const stored = decoded.find((kv) => kv.key.endsWith("events/leaky"))!;
    assert.ok(stored.value.includes(MARKER), `the stored event is marked: ${stored.value.slice(0, 500)}`);
  });

  it("keeps the secret out of `cts status --events`", async () => {
    const { out } = await cts(["status", "--events", "--http-addr", apiUrl], {});
    assert.ok(out.includes("FAILED"), out);
    assert.ok(!out.includes(SECRET), `the secret is in cts status: ${out}`);
    assert.ok(out.includes(MARKER), out);
    const json = await cts(["status", "--events", "--json", "--http-addr", apiUrl], {});
    assert.ok(!json.out.includes(SECRET) && json.out.includes(MARKER), json.out);
  });

  it("keeps the secret out of `cts once` (table and --json)", async () => {
    const file = await config("once", "leaky-once", false);
    const text = await cts(["once", "--config", file], env);
    assert.equal(text.code, 1, text.out);
    assert.ok(!text.out.includes(SECRET), `the secret is in cts once: ${text.out}`);
    assert.ok(text.out.includes(MARKER), text.out);
    const json = await cts(["once", "--json", "--config", file], env);
    assert.ok(!json.out.includes(SECRET), `the secret is in cts once --json: ${json.out}`);
    assert.ok(json.out.includes(MARKER), json.out);
  });

  it("keeps the secret out of the daemon's log lines (Terraform's output included)", () => {
    const logs = daemon!.logs();
    assert.ok(!logs.includes(SECRET), `the secret is in the daemon's logs: ${logs.split("\n").filter((l) => l.includes(SECRET)).slice(0, 3).join("\n")}`);
    assert.ok(logs.includes(MARKER), "the log marks the redacted error");
  });
});
