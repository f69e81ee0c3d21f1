import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdir, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import fc from "fast-check";
import { startConsul, type ConsulAgent } from "../support/consul.ts";
import { tempDir, waitFor } from "../support/cts.ts";
import { startCtsProcess, type CtsProcess } from "../support/cts-process.ts";
import { http } from "../support/api.ts";
import { tools } from "../support/tools.ts";
import { encodings, secretArbitrary, wellFormed } from "../fixtures/secret-encodings.ts";

const MARKER = "[redacted]";

/** Every string of a parsed JSON value, keys included. */
function stringsOf(v: unknown): string[] {
  if (typeof v === "string") return [v];
  if (Array.isArray(v)) return v.flatMap(stringsOf);
  if (v && typeof v === "object") return Object.entries(v).flatMap(([k, x]) => [k, ...stringsOf(x)]);
  return [];
}

/** Which secrets `text` shows, and in which spelling (empty when none). */
function leaks(text: string, secrets: string[]): string[] {
  const found: string[] = [];
  for (const [i, s] of secrets.entries()) for (const [name, form] of Object.entries(encodings(s))) if (text.includes(form)) found.push(`secret ${i} (${name})`);
  if (text.trimStart().startsWith("{") || text.trimStart().startsWith("[")) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      return [...found, "not valid JSON"];
    }
    for (const [i, s] of secrets.entries()) if (stringsOf(parsed).some((x) => x.includes(s))) found.push(`secret ${i} (decoded JSON)`);
  }
  return found;
}

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
  const secrets = fc
    .sample(
      secretArbitrary({ noNul: true })
        .map(wellFormed)
        // A path component "." or ".." would move the probe's directory elsewhere.
        .filter((s) => !s.split("/").some((c) => c === "." || c === "..")),
      { numRuns: 6, seed },
    )
    .map((s, i) => `${i}${s}`);
  let consul: ConsulAgent;
  let tmp: { dir: string; cleanup(): Promise<void> };
  let config: string;
  const env: Record<string, string> = { CHECKPOINT_DISABLE: "1" };

  before(async () => {
    consul = await startConsul();
    tmp = await tempDir();
    const t = tools();
    env.TF_CLI_CONFIG_FILE = t.cliConfig;
    const bin = join(tmp.dir, "bin");
    await mkdir(bin);
    await symlink(t.tofu, join(bin, "terraform"));
    const out = join(tmp.dir, "out");
    const module = join(tmp.dir, "probe-module");
    await mkdir(module, { recursive: true });
    await writeFile(
      join(module, "main.tf"),
      `terraform {
  required_providers {
    local = { source = "hashicorp/local" }
  }
}
variable "services" { type = any }
variable "out" { type = string }
resource "local_file" "probe" {
  for_each = var.services
  filename = "\${var.out}/\${each.value.meta.probe}"
  content  = "probe"
}
`,
    );
    for (const [i, s] of secrets.entries()) {
      env[`CTS_PROBE_${i}`] = s;
      await mkdir(join(out, s), { recursive: true });
      await consul.register({ Name: "probe", ID: `probe-${i}`, Address: "10.0.0.1", Port: 80, Meta: { probe: s } });
    }
    // A module that never uses the provider it is given: Terraform does not configure it then.
    const carrier = join(tmp.dir, "carrier-module");
    await mkdir(carrier);
    await writeFile(join(carrier, "main.tf"), `variable "services" { type = any }\nresource "terraform_data" "seen" { input = length(var.services) }\n`);
    await writeFile(join(tmp.dir, "probe.tfvars"), `out = ${JSON.stringify(out)}\n`);
    config = join(tmp.dir, "cts.hcl");
    // The provider block carries the values to the task 'carrier', whose module does not use the
    // provider, so Terraform never configures it: only cts reads the values (in its synthesis worker).
    await writeFile(
      config,
      `log_level   = "TRACE"
port        = 0
working_dir = ${JSON.stringify(join(tmp.dir, "work"))}

buffer_period {
  enabled = false
}

consul {
  address = "${consul.address}"
}

driver "terraform" {
  path = ${JSON.stringify(bin)}
  log  = true
  required_providers {
    local = { source = "hashicorp/local" }
  }
}

terraform_provider "local" {
${secrets.map((_, i) => `  probe_${i} = "{{ env \\"CTS_PROBE_${i}\\" }}"`).join("\n")}
}

task {
  name      = "carrier"
  module    = ${JSON.stringify(carrier)}
  providers = ["local"]
  condition "services" {
    names = ["probe"]
  }
}

task {
  name           = "probe"
  module         = ${JSON.stringify(module)}
  variable_files = [${JSON.stringify(join(tmp.dir, "probe.tfvars"))}]
  condition "services" {
    names = ["probe"]
  }
}
`,
    );
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
        assert.ok(failed.error!.message.includes(MARKER), `the failure names the redacted paths: ${failed.error!.message}`);
        // Terraform parsed the provider values it was given (TF_VAR_local, HCL) and applied the carrier.
        const carrier = await waitFor(async () => (await http(api, "GET", "/v1/status/tasks/carrier?include=events")).body?.carrier?.events?.[0], 60_000, "a run of 'carrier'");
        assert.equal(carrier.success, true, JSON.stringify(carrier));

        for (const path of ["/v1/status", "/v1/status/tasks?include=events", "/v1/status/tasks/probe?include=events", "/v1/tasks", "/v1/tasks/probe", "/ui/state"]) {
          const res = await http(api, "GET", path);
          assert.equal(res.status, 200, `${path}: ${res.text}`);
          assert.deepEqual(leaks(res.text, secrets), [], `the answer to ${path}: ${res.text.slice(0, 2000)}`);
        }
        const lines = daemon.logs().split("\n");
        const bad = lines.filter((l) => (format === "text" || l.startsWith("{") ? leaks(l, secrets).length > 0 : false));
        assert.deepEqual(bad.slice(0, 3), [], `log lines that show a secret: ${bad.slice(0, 3).map((l) => leaks(l, secrets).join(", ")).join("; ")}`);
        assert.deepEqual(leaks(daemon.logs(), secrets).filter((l) => l !== "not valid JSON"), [], "the log as a whole (a secret across a line break)");
        assert.ok(daemon.logs().includes(MARKER), "the log marks what it redacted");
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
