import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CtsError } from "../../src/errors/cts-error.ts";
import { createTerraformDriver, TERRAFORM_STATE_LOCKED, type StateLockWait } from "../../src/terraform/index.ts";
import { stateLockWaitLine } from "../../src/daemon/driver-setup.ts";
import type { LocalTerraformDriver, TerraformDriverOptions } from "../../src/terraform/types.ts";
import { startConsul, type ConsulAgent } from "../support/consul.ts";
import { tools } from "../support/tools.ts";
import { slowFileConfig } from "./support.ts";

/**
 * Two drivers with their own working dirs (two cts instances, or a person running tofu by hand)
 * share one task's state in Consul: the second one meets the first one's state lock.
 */
describe("Terraform state locks (real OpenTofu, real Consul)", () => {
  let consul: ConsulAgent;
  let root: string;
  const drivers: LocalTerraformDriver[] = [];
  const driver = (name: string, extra: Partial<TerraformDriverOptions> = {}) => {
    const d = createTerraformDriver({
      binary: tools().tofu,
      workingDir: join(root, name),
      cliConfigFile: tools().cliConfig,
      env: { CONSUL_HTTP_ADDR: consul.address },
      killGraceMs: 3_000,
      ...extra,
    });
    drivers.push(d);
    return d;
  };

  before(async () => {
    consul = await startConsul();
    root = await mkdtemp(join(tmpdir(), "cts-lock-"));
  });
  after(async () => {
    await consul?.stop();
    if (root) await rm(root, { recursive: true, force: true });
  });

  const task = (content: string, seconds: number) => ({ task: "web", json: slowFileConfig(join(root, "web.txt"), content, seconds) });

  it("fails with TERRAFORM_STATE_LOCKED naming the holder when the lock outlives the lock timeout", async () => {
    const holder = driver("a");
    await holder.apply(task("v0", 0)); // init and workspace out of the way
    const impatient = driver("b", { lockTimeoutMs: 2_000 });
    await impatient.plan(task("v0", 0));

    const stop = new AbortController();
    const lines: string[] = [];
    let provisioning!: () => void;
    const started = new Promise<void>((r) => (provisioning = r));
    const slow = holder.apply(task("v1", 60), {
      signal: stop.signal,
      onOutput: (l) => {
        lines.push(l);
        if (/terraform_data.slow: (Creating|Provisioning)/.test(l)) provisioning();
      },
    });
    slow.catch(() => undefined);
    try {
      await started;
      const err = await impatient.apply(task("v2", 0)).then(
        () => assert.fail("the apply should not get the lock"),
        (e: unknown) => e,
      );
      assert.ok(err instanceof CtsError, String(err));
      assert.equal(err.code, TERRAFORM_STATE_LOCKED, err.message);
      assert.equal(err.category, "external");
      const lock = err.detail.lock as Record<string, string>;
      assert.match(lock.ID ?? "", /\S/, JSON.stringify(err.detail));
      assert.equal(lock.Operation, "OperationTypeApply");
      assert.match(lock.Who ?? "", /@/);
      assert.match(err.message, /state is locked by /);
      assert.ok(err.message.includes(`force-unlock ${lock.ID}`), err.message);
      assert.doesNotMatch(err.message, /Fix the task's configuration/);
    } finally {
      stop.abort();
      await slow.catch(() => undefined);
    }
  });

  it("waits out a lock that is released within the lock timeout, saying once who holds it", async () => {
    const holder = drivers[0]!;
    const waits: StateLockWait[] = [];
    const patient = driver("c", { lockTimeoutMs: 120_000, onStateLockWait: (w) => waits.push(w) });
    await patient.plan(task("v0", 0));
    let provisioning!: () => void;
    const started = new Promise<void>((r) => (provisioning = r));
    const slow = holder.apply(task("v3", 4), {
      onOutput: (l) => {
        if (/terraform_data.slow: (Creating|Provisioning)/.test(l)) provisioning();
      },
    });
    await started;
    const waited = await patient.apply(task("v4", 0));
    assert.equal((await slow).changesPresent, true);
    assert.equal(waited.changesPresent, true);
    assert.equal(await readFile(join(root, "web.txt"), "utf8"), "v4");
    // The one line the waiting run logs (a paused member's tofu finishing its apply looks like this).
    assert.equal(waits.length, 1, JSON.stringify(waits));
    const [w] = waits;
    assert.equal(w!.task, "web");
    assert.match(w!.command, /^tofu apply/);
    assert.equal(w!.waitMs, 120_000);
    assert.equal(w!.lock?.Operation, "OperationTypeApply");
    assert.match(w!.lock?.Who ?? "", /@/);
    assert.match(w!.lock?.ID ?? "", /\S/);
    assert.match(w!.lock?.Created ?? "", /\d{4}-\d\d-\d\d/);
    const line = stateLockWaitLine(w!, 300_000);
    assert.ok(line.startsWith(`task 'web': waiting for the Terraform state lock held by ${w!.lock!.Who} (ID ${w!.lock!.ID}, OperationTypeApply, created `), line);
    assert.match(line, /waits up to 2m for it, then the run is retried for up to 5m/);
  });
});
