import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { startConsul, type ConsulAgent } from "../support/consul.ts";
import { tempDir, waitFor } from "../support/cts.ts";
import { startCtsProcess, type CtsProcess } from "../support/cts-process.ts";
import { http } from "../support/api.ts";
import { leaks, PROBE_PATHS, probeSecrets, REDACTED, writeSecretProbe } from "../fixtures/secret-probe.ts";

/**
 * Secrets that only the synthesis worker reads (`{{ env }}` in a CTS terraform_provider block),
 * printed by the provider and by Terraform in their own spellings (Go's `%q` in trace lines,
 * Go's JSON in `-json` output and debug-mode provider logs), must be redacted in everything the
 * daemon shows. The same values reach Terraform as catalog data (a service's meta), which the
 * module puts in a file name; a directory of that name makes the write fail with the name in the
 * error. Generated secrets: the full Unicode range with quotes, backslashes, newlines, `<>&`, `${`, `%{`
 * (no NUL: an environment variable cannot hold one; the redactor's unit tests cover it).
 */
describe("generated secrets from {{ env }} in a CTS provider block, printed by Terraform (real Consul, real OpenTofu, cts watch)", () => {
  const seed = Date.now() % 2 ** 31;
  const secrets = probeSecrets(seed, 6);
  let consul: ConsulAgent;
  let tmp: { dir: string; cleanup(): Promise<void> };
  let config: string;
  let env: Record<string, string>;

  before(async () => {
    consul = await startConsul();
    tmp = await tempDir();
    ({ config, env } = await writeSecretProbe(tmp.dir, consul, secrets));
  });
  after(async () => {
    await consul?.stop();
    await tmp?.cleanup();
  });

  for (const format of ["text", "json"] as const) {
    it(`keeps all ${secrets.length} (seed ${seed}) out of every ${format} log line, the events, the API answers and /ui/state`, { timeout: 300_000 }, async () => {
      let daemon: CtsProcess | undefined;
      try {
        daemon = startCtsProcess(config, { name: `cts-${format}`, env, args: ["--log-level", "trace", "--log-format", format] });
        const { line } = await daemon.waitForLine(/api: listening on/, 120_000);
        const api = /listening on (https?:\/\/[\w.:[\]]+)/.exec(line)![1]!;
        const failed = (await waitFor(
          async () => {
            const res = await http(api, "GET", "/v1/status/tasks/probe?include=events");
            return (res.body?.probe?.events as Array<{ success: boolean; error: { message: string } | null }> | undefined)?.find((e) => !e.success);
          },
          180_000,
          "a failed run of 'probe'",
        ))!;
        assert.ok(failed.error!.message.includes(REDACTED), `the failure names the redacted paths: ${failed.error!.message}`);
        // Terraform parsed the provider values it was given (TF_VAR_local, HCL) and applied the carrier.
        const carrier = await waitFor(async () => (await http(api, "GET", "/v1/status/tasks/carrier?include=events")).body?.carrier?.events?.[0], 60_000, "a run of 'carrier'");
        assert.equal(carrier.success, true, JSON.stringify(carrier));

        for (const path of PROBE_PATHS) {
          const res = await http(api, "GET", path);
          assert.equal(res.status, 200, `${path}: ${res.text}`);
          assert.deepEqual(leaks(res.text, secrets), [], `the answer to ${path}: ${res.text.slice(0, 2000)}`);
        }
        const lines = daemon.logs().split("\n");
        const bad = lines.filter((l) => (format === "text" || l.startsWith("{") ? leaks(l, secrets).length > 0 : false));
        assert.deepEqual(bad.slice(0, 3), [], `log lines that show a secret: ${bad.slice(0, 3).map((l) => leaks(l, secrets).join(", ")).join("; ")}`);
        assert.deepEqual(leaks(daemon.logs(), secrets).filter((l) => l !== "not valid JSON"), [], "the log as a whole (a secret across a line break)");
        assert.ok(daemon.logs().includes(REDACTED), "the log marks what it redacted");
        if (format === "json") {
          const notJson = lines.filter((l) => l.trim() && !l.startsWith("{"));
          assert.deepEqual(notJson.slice(0, 3), [], "every line is a JSON object");
        }
      } finally {
        await daemon?.terminate();
      }
    });
  }
});
