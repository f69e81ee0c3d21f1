import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { startConsul } from "../support/consul.ts";
import { startRuntime, tempDir, writeConfig } from "../support/cts.ts";
import { tools } from "../support/tools.ts";

describe("the driver works with `terraform` as well as `tofu`", () => {
  it("applies, plans and re-applies a task with Terraform 1.5, state in Consul", async () => {
    const consul = await startConsul();
    const tmp = await tempDir();
    try {
      await consul.register({ Name: "web", ID: "web-1", Address: "10.0.0.1", Port: 80 });
      const out = join(tmp.dir, "members.txt");
      const file = await writeConfig(tmp.dir, { consulAddress: consul.address, binary: tools().terraform, tasks: [`new MemberList("members", ${JSON.stringify(out)})`] });
      const rt = await startRuntime(file, { mode: "once" });
      try {
        assert.match(await rt.driver.version(), /^1\.5\./);
        const [first] = await rt.controller.once();
        assert.equal(first!.ok, true, first!.error?.message);
        assert.equal(await readFile(out, "utf8"), "web-1 10.0.0.1:80\n");
        const [plan] = await rt.controller.inspect();
        assert.equal(plan!.result!.changesPresent, false, plan!.result!.output);
        await consul.register({ Name: "web", ID: "web-2", Address: "10.0.0.2", Port: 80 });
        const [again] = await rt.controller.once();
        assert.equal(again!.ok, true, again!.error?.message);
        assert.equal(await readFile(out, "utf8"), "web-1 10.0.0.1:80\nweb-2 10.0.0.2:80\n");
        const state = await consul.api("GET", "/v1/kv/consul-terraform-sync/terraform-env:members");
        assert.equal(state.length, 1);
      } finally {
        await rt.close();
      }
    } finally {
      await consul.stop();
      await tmp.cleanup();
    }
  });
});
