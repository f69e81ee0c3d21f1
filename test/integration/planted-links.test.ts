import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdir, readFile, rm, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { startConsul, type ConsulAgent } from "../support/consul.ts";
import { startRuntime, tempDir, waitFor, writeConfig, type TestRuntime } from "../support/cts.ts";

const read = (p: string) => readFile(p, "utf8").catch(() => "");

/**
 * A link planted at a task's `.terraform.lock.hcl` (found by a fault probe: every later run failed
 * in `tofu init` with an error that did not mention the link): the run fails with
 * WORKING_DIR_UNUSABLE naming the link before OpenTofu runs, nothing is written through it, and the
 * daemon goes on with its other tasks. Real Consul, real OpenTofu.
 */
describe("a link planted in a task's working dir (real OpenTofu)", () => {
  let consul: ConsulAgent;
  let tmp: { dir: string; cleanup(): Promise<void> };
  let rt: TestRuntime;
  const file = (name: string) => join(tmp.dir, `${name}.txt`);
  let link: string;
  let outside: string;

  before(async () => {
    consul = await startConsul();
    tmp = await tempDir("cts-planted-");
    await consul.register({ Name: "web", ID: "web-1", Address: "10.0.0.1", Port: 80 });
    const config = await writeConfig(tmp.dir, {
      consulAddress: consul.address,
      tasks: [`new MemberList("linked", ${JSON.stringify(file("linked"))})`, `new MemberList("other", ${JSON.stringify(file("other"))})`],
    });
    outside = join(tmp.dir, "outside.lock.hcl");
    await writeFile(outside, "# not cts's\n");
    await mkdir(join(tmp.dir, "sync-tasks", "linked"), { recursive: true, mode: 0o750 });
    link = join(tmp.dir, "sync-tasks", "linked", ".terraform.lock.hcl");
    await symlink(outside, link);
    // One retry: its warn line names the failure's code.
    rt = await startRuntime(config, { retries: 1 });
  });
  after(async () => {
    await rt?.close();
    await consul?.stop();
    await tmp?.cleanup();
  });

  it("fails the task's run with WORKING_DIR_UNUSABLE naming the link, before OpenTofu runs, and writes nothing through it", async () => {
    await waitFor(() => rt.controller.events.list("linked").length > 0, 60_000, "the linked task's failed run (after its retry)");
    const ev = rt.controller.events.list("linked")[0]!;
    assert.equal(ev.success, false);
    assert.ok(ev.error!.message.includes(link), ev.error!.message);
    assert.match(ev.error!.message, /is a symbolic link; cts does not write or read through links.*remove the link/);
    const retried = rt.lines.filter((l) => l.includes("task 'linked': attempt 1 failed"));
    assert.ok(retried.some((l) => l.includes("(WORKING_DIR_UNUSABLE)") && l.includes(link)), `the code and the link in the log:\n${rt.lines.filter((l) => /linked/.test(l)).slice(-5).join("\n")}`);
    assert.ok(!rt.lines.some((l) => /linked.*(Initializing|tofu init)/.test(l)), "no init ran in the folder");
    assert.equal(await read(outside), "# not cts's\n", "the file behind the link is untouched");
    assert.equal(await read(file("linked")), "");
  });

  it("goes on with the other task, and runs the task again once the link is gone", async () => {
    await waitFor(async () => (await read(file("other"))) === "web-1 10.0.0.1:80\n", 60_000, "the other task's apply");
    await rm(link);
    await consul.register({ Name: "web", ID: "web-2", Address: "10.0.0.2", Port: 80 });
    const both = "web-1 10.0.0.1:80\nweb-2 10.0.0.2:80\n";
    await waitFor(async () => (await read(file("other"))) === both, 60_000, "the other task's next apply");
    await waitFor(async () => (await read(file("linked"))) === both, 60_000, "the linked task's apply once the link is gone");
    assert.equal(await read(outside), "# not cts's\n");
  });
});
