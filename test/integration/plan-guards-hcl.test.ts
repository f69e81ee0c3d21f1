import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { access, mkdir, readFile, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { execa } from "execa";
import { startConsul } from "../support/consul.ts";
import { tempDir, waitFor } from "../support/cts.ts";
import { http } from "../support/api.ts";
import { freePort } from "../support/ports.ts";
import { CTS_BIN } from "../support/cts-process.ts";
import { tools } from "../support/tools.ts";

const MODULE = fileURLToPath(new URL("../fixtures/cts-modules/record", import.meta.url));

describe("plan guards in a CTS configuration (cts start, HCL)", () => {
  it('holds every plan of a task with guards { approval = "always" }, shows it in cts status, applies it with cts approve', async () => {
    const consul = await startConsul();
    const tmp = await tempDir();
    try {
      await consul.register({ Name: "api", ID: "api-1", Address: "10.1.0.1", Port: 9000 });
      const bin = join(tmp.dir, "bin");
      await mkdir(bin);
      await symlink(tools().tofu, join(bin, "terraform"));
      const port = await freePort();
      const out = join(tmp.dir, "svc.json");
      await writeFile(join(tmp.dir, "svc.tfvars"), `prefix = "p"\nports  = [80]\nout    = "${out}"\n`);
      const config = join(tmp.dir, "cts.hcl");
      await writeFile(
        config,
        `port        = ${port}
working_dir = "work"
buffer_period {
  enabled = false
}
consul {
  address = "${consul.address}"
}
driver "terraform" {
  path = "${bin}"
}
guards {
  max_destroy = 10
}
task {
  name           = "svc"
  module         = "${MODULE}"
  variable_files = ["svc.tfvars"]
  condition "services" {
    names = ["api"]
  }
  guards {
    approval = "always"
  }
}
`,
      );
      const env = { ...process.env, TF_CLI_CONFIG_FILE: tools().cliConfig, CHECKPOINT_DISABLE: "1" };
      const url = `http://127.0.0.1:${port}`;
      const daemon = execa(process.execPath, [CTS_BIN, "start", "-config-file", config], { cwd: tmp.dir, env, reject: false, all: true });
      try {
        let exited = false;
        void daemon.finally(() => (exited = true));
        const held = await waitFor(
          async () => {
            if (exited) throw new Error(`cts start exited:\n${(await daemon).all}`);
            return (await http(url, "GET", "/v1/status/tasks/svc")).body?.svc?.held;
          },
          120_000,
          "the task to hold its first plan",
        ).catch(async (err) => {
          daemon.kill("SIGTERM");
          throw new Error(`${(err as Error).message}\n${(await daemon).all}`);
        });
        assert.equal(held.why, "always");
        assert.ok(held.changes.add >= 1, JSON.stringify(held));
        assert.equal(await access(out).then(() => true, () => false), false, "nothing applied");
        const status = await execa(process.execPath, [CTS_BIN, "status", "--http-addr", url], { env, reject: false });
        assert.equal(status.exitCode, 0, status.stderr);
        assert.match(status.stdout, /svc\s+held\s+true/);
        assert.match(status.stdout, /reason: the task's approval is "always"/);
        const approve = await execa(process.execPath, [CTS_BIN, "approve", "svc", "--http-addr", url], { env, reject: false });
        assert.equal(approve.exitCode, 0, approve.stdout + approve.stderr);
        assert.match(approve.stdout, /task 'svc': applied \+\d+ ~0 -0/);
        const got = JSON.parse(await readFile(out, "utf8"));
        assert.deepEqual(Object.values<any>(got.services).map((s) => s.id), ["api-1"]);
        const again = await execa(process.execPath, [CTS_BIN, "approve", "svc", "--http-addr", url], { env, reject: false });
        assert.notEqual(again.exitCode, 0);
        assert.match(again.stderr, /holds no plan waiting for approval/);
      } finally {
        daemon.kill("SIGTERM");
        const res = await daemon;
        assert.equal(res.exitCode, 0, res.all);
      }
    } finally {
      await consul.stop();
      await tmp.cleanup();
    }
  });
});
