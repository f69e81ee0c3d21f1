import { spawnSync } from "node:child_process";
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadConfig } from "../../src/config/load.ts";
import { runDoctor } from "../../src/doctor/doctor.ts";
import { checkWorkingDirBinaries } from "../../src/doctor/local-checks.ts";
import { createCommandRunner } from "../../src/terraform/command-runner.ts";
import { createTerraformDriver } from "../../src/terraform/driver.ts";
import type { LocalTerraformDriver } from "../../src/terraform/types.ts";
import { binaryIdentity, identityText } from "../../src/terraform/version.ts";
import { readInitRecordSync } from "../../src/terraform/working-dir.ts";
import { startConsul, type ConsulAgent } from "../support/consul.ts";
import { startRuntime, tempDir, writeConfig } from "../support/cts.ts";
import { freePort } from "../support/ports.ts";
import { tools } from "../support/tools.ts";

/** A task writing one file through hashicorp/local, state in Consul as CTS keeps it. */
function config(filename: string, content: string): string {
  return JSON.stringify({
    terraform: { backend: { consul: { path: "consul-terraform-sync/terraform", gzip: true } }, required_providers: { local: { source: "hashicorp/local", version: ">= 2.0" } } },
    resource: { local_file: { out: { filename, content } } },
  });
}

function driverWith(binary: string, root: string, consul: ConsulAgent, lines: string[]): LocalTerraformDriver {
  return createTerraformDriver({
    binary,
    workingDir: root,
    cliConfigFile: tools().cliConfig,
    env: { CONSUL_HTTP_ADDR: consul.address },
    warmProviders: false,
    taskNotice: (task, line) => lines.push(`${task}: ${line}`),
  });
}

/** Switches the binary one way: init and apply with `from`, then plan and apply with `to`. */
async function switchBinary(from: string, to: string): Promise<void> {
  const consul = await startConsul();
  const tmp = await mkdtemp(join(tmpdir(), "cts-binary-switch-"));
  const root = join(tmp, "sync-tasks");
  const out = join(tmp, "out.txt");
  const env = { TF_CLI_CONFIG_FILE: tools().cliConfig, PATH: process.env.PATH ?? "" };
  const probes = createCommandRunner({ binary: from, workingDir: tmp, env }, () => {});
  const fromId = identityText(await binaryIdentity(probes, from));
  const toId = identityText(await binaryIdentity(probes, to));
  probes.close();
  const lines: string[] = [];
  try {
    const first = driverWith(from, root, consul, lines);
    try {
      const r = await first.apply({ task: "switch", json: config(out, "one\n") });
      assert.equal(r.initialized, true);
      assert.equal(await readFile(out, "utf8"), "one\n");
      assert.equal(readInitRecordSync(join(root, "switch"))?.binary, fromId, "the init record names the binary that made the dir");
    } finally {
      await first.close();
    }

    // Before the second binary runs, doctor names the dir and what made it.
    const before = checkWorkingDirBinaries([{ task: "switch", dir: join(root, "switch") }], toId, to);
    assert.equal(before.ok, false);
    assert.match(before.detail, new RegExp(`${join(root, "switch")} \\(task 'switch': initialized by ${fromId.replace(/\./g, "\\.")}\\)`));
    assert.match(before.fix!, /next run of each task re-initializes/);

    const second = driverWith(to, root, consul, lines);
    try {
      if (fromId.startsWith("tofu ") && toId.startsWith("terraform ")) {
        // OpenTofu's state names registry.opentofu.org providers: the run says exactly what to run once.
        const failed = await second.plan({ task: "switch", json: config(out, "one\n") }).then(
          () => assert.fail("Terraform cannot plan a state OpenTofu wrote before its providers are moved"),
          (err: Error) => err,
        );
        assert.doesNotMatch(failed.message, /plugin cache/);
        const commands = [...failed.message.matchAll(/`terraform (state replace-provider [^`]+)`/g)].map((m) => m[1]!.split(" "));
        assert.deepEqual(commands, [["state", "replace-provider", "-auto-approve", "registry.opentofu.org/hashicorp/local", "registry.terraform.io/hashicorp/local"]], failed.message);
        for (const args of commands) {
          const r = spawnSync(to, args, { cwd: join(root, "switch"), env: { ...env, TF_WORKSPACE: "switch", CONSUL_HTTP_ADDR: consul.address }, encoding: "utf8" });
          assert.equal(r.status, 0, r.stderr);
        }
      }
      const plan = await second.plan({ task: "switch", json: config(out, "one\n") });
      assert.equal(plan.initialized, !(fromId.startsWith("tofu ") && toId.startsWith("terraform ")), "the new binary re-initializes the dir (once)");
      // tofu → terraform: the moved provider address makes Terraform plan an in-place update with no
      // attribute changed (10 unchanged attributes); the other way the plan is empty.
      if (!toId.startsWith("terraform ")) assert.equal(plan.changesPresent, false, plan.output);
      const applied = await second.apply({ task: "switch", json: config(out, "two\n") });
      assert.equal(applied.initialized, false, "initialized once for the new binary, not on every run");
      assert.equal(await readFile(out, "utf8"), "two\n");
    } finally {
      await second.close();
    }
    const reinit = lines.filter((l) => l.includes("re-initializing"));
    assert.equal(reinit.length, 1, lines.join("\n"));
    assert.match(reinit[0]!, new RegExp(`initialized by ${fromId.replace(/\./g, "\\.")} and this cts runs ${toId.replace(/\./g, "\\.")}`));
    assert.equal(readInitRecordSync(join(root, "switch"))?.binary, toId);
    assert.equal(checkWorkingDirBinaries([{ task: "switch", dir: join(root, "switch") }], toId, to).ok, true);
  } finally {
    await consul.stop();
    await rm(tmp, { recursive: true, force: true });
  }
}

describe("the binary is part of a working dir's identity (real tofu, real Terraform 1.5.7)", () => {
  it("a dir initialized by tofu is re-initialized once when terraform runs it (after the one state command the run names), and doctor names it before", async () => {
    await switchBinary(tools().tofu, tools().terraform);
  });

  it("a dir initialized by terraform is re-initialized once when tofu runs it", async () => {
    await switchBinary(tools().terraform, tools().tofu);
  });

  it("cts doctor names the task's dir and what made it when the config's binary changed, and passes after the next run", async () => {
    const consul = await startConsul();
    const tmp = await tempDir();
    try {
      await consul.register({ Name: "web", ID: "web-1", Address: "10.0.0.1", Port: 80 });
      const task = `new MemberList("members", ${JSON.stringify(join(tmp.dir, "members.txt"))})`;
      const port = await freePort();
      const config = (binary: string) => writeConfig(tmp.dir, { consulAddress: consul.address, binary, extra: `api: { port: ${port} },`, tasks: [task] });
      const once = async (file: string) => {
        const rt = await startRuntime(file, { mode: "once" });
        try {
          const [r] = await rt.controller.once();
          assert.equal(r!.ok, true, r!.error?.message);
        } finally {
          await rt.close();
        }
      };
      await once(await config(tools().terraform));
      const file = await config(tools().tofu);
      const dirs = async () => (await runDoctor(await loadConfig(file))).find((r) => r.name === "working-dirs")!;
      const before = await dirs();
      assert.equal(before.ok, false);
      assert.match(before.detail, new RegExp(`${join(tmp.dir, "sync-tasks", "members")} \\(task 'members': initialized by terraform 1\\.5\\.7\\)`));
      await once(file);
      const after = await dirs();
      assert.equal(after.ok, true, after.detail);
      assert.match(after.detail, /1 initialized working dir, all by tofu /);
    } finally {
      await consul.stop();
      await tmp.cleanup();
    }
  });
});
