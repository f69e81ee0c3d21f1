import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CtsError } from "../../src/errors/cts-error.ts";
import { createPrometheusMetrics } from "../../src/metrics/prometheus.ts";
import { createTerraformDriver, TERRAFORM_HUNG } from "../../src/terraform/index.ts";
import type { LocalTerraformDriver } from "../../src/terraform/types.ts";
import { startConsul, type ConsulAgent } from "../support/consul.ts";
import { tools } from "../support/tools.ts";
import { waitFor } from "../support/cts.ts";
import { processesIn, slowFileConfig } from "./support.ts";

/**
 * A stand-in for tofu that runs the real one, except that creating the workspace (`workspace select
 * -or-create`, or `workspace new`) hangs (ignoring SIGINT, as the deadlocked consul backend did) the first $HANGS times in a task folder, and `apply` goes
 * silent (prints nothing, never exits) the first $SILENT times.
 */
function standIn(real: string): string {
  return `#!/bin/sh
if [ "$1" = "workspace" ] && { [ "$2" = "new" ] || [ "$3" = "-or-create" ]; }; then
  n=$(cat .hangs-so-far 2>/dev/null || echo 0)
  echo $((n + 1)) > .hangs-so-far
  if [ "$n" -lt "\${HANGS:-0}" ]; then
    trap '' INT
    sleep 1000
    exit 1
  fi
fi
if [ "$1" = "apply" ]; then
  n=$(cat .silent-so-far 2>/dev/null || echo 0)
  echo $((n + 1)) > .silent-so-far
  if [ "$n" -lt "\${SILENT:-0}" ]; then
    trap '' INT
    sleep 1000
    exit 1
  fi
fi
exec ${JSON.stringify(real)} "$@"
`;
}

describe("a Terraform command that hangs (stand-in around the real OpenTofu, real Consul)", () => {
  let consul: ConsulAgent;
  let root: string;
  let work: string;
  let driver: LocalTerraformDriver;
  const metrics = createPrometheusMetrics();
  const lines: string[] = [];

  before(async () => {
    consul = await startConsul();
    root = await mkdtemp(join(tmpdir(), "cts-hang-"));
    work = join(root, "sync-tasks");
    await mkdir(join(root, "bin"));
    const binary = join(root, "bin", "tofu");
    await writeFile(binary, standIn(tools().tofu));
    await chmod(binary, 0o755);
    driver = createTerraformDriver({
      binary,
      workingDir: work,
      cliConfigFile: tools().cliConfig,
      env: { CONSUL_HTTP_ADDR: consul.address },
      killGraceMs: 1_000,
      lockTimeoutMs: 2_000,
      // Long enough that a real command on a loaded machine is never taken for a hung one.
      commandTimeouts: { workspace: 10_000, silence: 10_000 },
      metrics,
      log: (task, line) => lines.push(`${task}: ${line}`),
    });
  });
  after(async () => {
    await consul?.stop();
    if (root) await rm(root, { recursive: true, force: true });
  });

  /**
   * Waits until nothing runs in the working directory but this process's warm providers. The driver
   * SIGKILLs a hung command's group as it gives up on it; the kernel ends those processes a moment
   * later: wait for that, bounded.
   */
  async function nothingLeft(): Promise<void> {
    let left: string[] = [];
    await waitFor(async () => (left = await processesIn(work, { exceptWarmOf: process.pid })).length === 0, 20_000, "the hung commands to end").catch((err: Error) => {
      throw new Error(`${err.message}; still running: ${left.join(", ")}`);
    });
  }

  const task = (name: string, hangs: number) => ({ task: name, json: slowFileConfig(join(root, `${name}.txt`), name), env: { HANGS: String(hangs) } });

  it("kills a command that hangs once and runs it again", async () => {
    const res = await driver.apply(task("once", 1));
    assert.equal(res.changesPresent, true);
    assert.equal(await readFile(join(root, "once.txt"), "utf8"), "once");
    assert.equal(driver.hungCommands(), 1);
    assert.match((await metrics.scrape()).body, /^cts_terraform_hung_commands_total\{command="workspace"\} 1$/m, "the metric counts it");
    assert.ok(lines.some((l) => /^once: Terraform hung in `tofu workspace select` \(no exit within 10s\); killed it, running it once more/.test(l)), lines.join("\n"));
    await nothingLeft();
  });

  it("kills an apply that prints nothing past the silence limit and runs it once more", async () => {
    const res = await driver.apply({ task: "quiet", json: slowFileConfig(join(root, "quiet.txt"), "quiet"), env: { SILENT: "1" } });
    assert.equal(res.changesPresent, true);
    assert.equal(await readFile(join(root, "quiet.txt"), "utf8"), "quiet");
    assert.ok(lines.some((l) => /^quiet: Terraform hung in `tofu apply` \(no output for 10s\); killed it, running it once more/.test(l)), lines.join("\n"));
    await nothingLeft();
  });

  it("fails with TERRAFORM_HUNG when the command hangs again, leaving nothing running", async () => {
    const err = await driver.apply(task("twice", 2)).then(
      () => assert.fail("the apply should fail"),
      (e: unknown) => e,
    );
    assert.ok(err instanceof CtsError, String(err));
    assert.equal(err.code, TERRAFORM_HUNG);
    assert.equal(err.category, "external");
    assert.match(err.message, /Terraform hung in `tofu workspace select` \(no exit within 10s\); it was killed and retried once/);
    assert.equal(driver.hungCommands(), 4);
    await nothingLeft();
  });
});
