import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn, execFile, type ChildProcess } from "node:child_process";
import { access, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { startConsul, type ConsulAgent } from "../support/consul.ts";
import { tempDir, waitFor, writeConfig } from "../support/cts.ts";
import { consulState, writeEchoModule } from "../support/api.ts";
import { freePort } from "../support/ports.ts";

const CTS = fileURLToPath(new URL("../../bin/cts.js", import.meta.url));
const exists = (p: string) => access(p).then(() => true, () => false);
const read = (p: string) => readFile(p, "utf8").catch(() => "");

describe("cts task and cts status against a running daemon (real Consul, real OpenTofu)", () => {
  let consul: ConsulAgent;
  let tmp: { dir: string; cleanup(): Promise<void> };
  let daemon: ChildProcess;
  let log = "";
  let address: string;

  /** Runs the CLI with CTS_ADDRESS pointing at the daemon; stdin is not a terminal. */
  const cts = (args: string[], env: Record<string, string> = {}): Promise<{ code: number; stdout: string; stderr: string }> =>
    new Promise((resolve) => {
      execFile("node", [CTS, ...args], { env: { ...process.env, CTS_ADDRESS: address, ...env } }, (err, stdout, stderr) =>
        resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
      );
    });
  const hclTask = (name: string, body = "") => `# a CTS task block
task "${name}" {
  description = "created by the CLI" // comments of every kind
  module      = "./modules/echo"
  condition "services" {
    names = ["web"]
  }
  variables = {
    path = ${JSON.stringify(join(tmp.dir, `${name}.txt`))}
  }
  buffer_period {
    enabled = false
  }
  ${body}
}
`;

  before(async () => {
    consul = await startConsul();
    tmp = await tempDir();
    await writeEchoModule(tmp.dir);
    await consul.register({ Name: "web", ID: "web-1", Address: "10.0.0.1", Port: 80 });
    const port = await freePort();
    address = `127.0.0.1:${port}`;
    const file = await writeConfig(tmp.dir, {
      consulAddress: consul.address,
      extra: `id: "cts-cli-test", api: { port: ${port} },`,
      tasks: [`new MemberList("members", ${JSON.stringify(join(tmp.dir, "members.txt"))})`],
    });
    daemon = spawn("node", [CTS, "watch", "--config", file], { stdio: ["ignore", "pipe", "pipe"] });
    daemon.stdout!.on("data", (d) => (log += d));
    daemon.stderr!.on("data", (d) => (log += d));
    await waitFor(() => log.includes("api: listening on") && log.includes("task 'members': applied"), 60_000, `the daemon to start:\n${log}`);
  });
  after(async () => {
    if (daemon && daemon.exitCode === null) {
      const exited = new Promise((r) => daemon.once("exit", r));
      daemon.kill("SIGTERM");
      await exited;
    }
    await consul?.stop();
    await tmp?.cleanup();
  });

  it("task list prints a table, and JSON with --json", async () => {
    const r = await cts(["task", "list"]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^NAME\s+ENABLED\s+STATUS\s+ORIGIN\s+MODULE\s+CONDITION$/m);
    assert.match(r.stdout, /^members\s+true\s+successful\s+config\s+\(task class MemberList\)\s+services web$/m);
    const j = await cts(["task", "list", "--json"]);
    assert.equal(j.code, 0, j.stderr);
    assert.deepEqual(JSON.parse(j.stdout).tasks.map((t: { name: string; status: string }) => [t.name, t.status]), [["members", "successful"]]);
  });

  it("status prints the summary and each task", async () => {
    const r = await cts(["status"]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /Tasks: 1 successful, 0 errored, 0 critical, 0 unknown; 1 enabled, 0 disabled/);
    assert.match(r.stdout, /^members\s+successful\s+true/m);
    const e = await cts(["status", "members", "--events", "--json"]);
    assert.equal(e.code, 0, e.stderr);
    assert.equal(JSON.parse(e.stdout).tasks.members.events[0].success, true);
  });

  it("status finds the daemon through the config's api.port (no --http-addr, no CTS_ADDRESS) and shows each task's last run without --events", async () => {
    const r = await new Promise<{ code: number; stdout: string; stderr: string }>((resolve) =>
      execFile("node", [CTS, "status"], { cwd: tmp.dir, env: { ...process.env, CTS_ADDRESS: "" } }, (err, stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr })),
    );
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^members\s+successful\s+true\s+\d{4}-\d\d-\d\dT\S+\s+applied\b/m, r.stdout);
    assert.doesNotMatch(r.stdout, /use --events|==> members: last/);
    const j = await cts(["status", "members", "--json"]);
    assert.equal(JSON.parse(j.stdout).tasks.members.last_run.outcome, "applied");
  });

  it("doctor, while the daemon runs, recognises it on its own API port and passes", { timeout: 300_000 }, async () => {
    const r = await new Promise<{ code: number; stdout: string; stderr: string }>((resolve) =>
      execFile("node", [CTS, "doctor"], { cwd: tmp.dir }, (err, stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr })),
    );
    assert.match(r.stdout, new RegExp(`✓ api-port: ${address.replace(/\./g, "\\.")} is held by this config's cts daemon \\(id 'cts-cli-test'\\), which is running`), r.stdout);
    assert.equal(r.code, 0, `${r.stdout}\n${r.stderr}`);
  });

  it("status --events lists the resources each run changed, by address and action, beside the counts", async () => {
    const r = await cts(["status", "members", "--events"]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^ {2}\S+ {2}ok {4} {2}applied {2}\+1 ~0 -0\n {6}\+ local_file\.members \(create\)$/m);
    const j = await cts(["status", "members", "--events", "--json"]);
    assert.deepEqual(JSON.parse(j.stdout).tasks.members.events[0].resources, [{ address: "local_file.members", action: "create" }]);
  });

  it("create without a terminal and without --auto-approve shows the plan, then refuses and changes nothing", async () => {
    await writeFile(join(tmp.dir, "cli_echo.hcl"), hclTask("cli_echo"));
    const r = await cts(["task", "create", "--task-file", join(tmp.dir, "cli_echo.hcl")]);
    assert.equal(r.code, 11, r.stderr);
    assert.match(r.stdout, /Inspecting task 'cli_echo': changes present/);
    assert.match(r.stderr, /Refusing to create task 'cli_echo' .* without approval: stdin is not a terminal.*--auto-approve/);
    const list = await cts(["task", "list", "--json"]);
    assert.deepEqual(JSON.parse(list.stdout).tasks.map((t: { name: string }) => t.name), ["members"]);
  });

  it("create -task-file=… -auto-approve (CTS's spelling, HCL) shows the plan, creates the task and runs it", async () => {
    const r = await cts(["task", "create", `-task-file=${join(tmp.dir, "cli_echo.hcl")}`, "-auto-approve"]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /local_file\.out/);
    assert.match(r.stdout, /Task 'cli_echo' created and run: applied \(1 added, 0 changed, 0 destroyed\)/);
    assert.equal(await read(join(tmp.dir, "cli_echo.txt")), "hello web-1\n");
    const again = await cts(["task", "create", "--task-file", join(tmp.dir, "cli_echo.hcl"), "--auto-approve"]);
    assert.equal(again.code, 11, "CTS's exit code for an error");
    assert.match(again.stderr, /already exists/);
  });

  it("disable, then enable shows the plan of what changed meanwhile and runs it", async () => {
    const off = await cts(["task", "disable", "-http-addr", `http://${address}`, "cli_echo"], { CTS_ADDRESS: "" });
    assert.equal(off.code, 0, off.stderr);
    assert.match(off.stdout, /Task 'cli_echo' disabled/);
    const refused = await cts(["task", "run", "cli_echo"]);
    assert.equal(refused.code, 11);
    assert.match(refused.stderr, /is disabled\. Enable it with `cts task enable cli_echo`/);
    await consul.register({ Name: "web", ID: "web-2", Address: "10.0.0.2", Port: 80 });
    const on = await cts(["task", "enable", "--http-addr", address, "-auto-approve=true", "cli_echo"], { CTS_ADDRESS: "" });
    assert.equal(on.code, 0, on.stderr);
    assert.match(on.stdout, /Inspecting task 'cli_echo': changes present/);
    assert.match(on.stdout, /hello web-1,web-2/, "the plan shows the new content");
    assert.match(on.stdout, /Task 'cli_echo' enabled and run: applied/);
    assert.equal(await read(join(tmp.dir, "cli_echo.txt")), "hello web-1,web-2\n");
    const run = await cts(["task", "run", "cli_echo"]);
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stdout, /Task 'cli_echo' ran: no-op/);
  });

  it("delete --destroy --auto-approve destroys the infrastructure and empties the state", async () => {
    const r = await cts(["task", "delete", "cli_echo", "--destroy", "--auto-approve"]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /will be DESTROYED/);
    assert.match(r.stdout, /Task 'cli_echo' deleted \(1 resources destroyed\)/);
    assert.equal(await exists(join(tmp.dir, "cli_echo.txt")), false);
    assert.deepEqual((await consulState(consul.url, "cli_echo"))?.resources ?? [], []);
  });

  it("create from a JSON task file with --json, and delete without --destroy keeps the infrastructure", async () => {
    const file = join(tmp.dir, "json_echo.json");
    await writeFile(file, JSON.stringify({ task: { name: "json_echo", module: "./modules/echo", condition: { services: { names: ["web"] } }, variables: { path: join(tmp.dir, "json_echo.txt") } } }));
    const r = await cts(["task", "create", "--task-file", file, "--auto-approve", "--json"]);
    assert.equal(r.code, 0, r.stderr);
    const out = JSON.parse(r.stdout);
    assert.equal(out.task.name, "json_echo");
    assert.equal(out.run.outcome, "applied");
    assert.equal(out.inspect.changes_present, true);
    const del = await cts(["task", "delete", "json_echo", "--auto-approve"]);
    assert.equal(del.code, 0, del.stderr);
    assert.equal(await read(join(tmp.dir, "json_echo.txt")), "hello web-1,web-2\n", "delete alone destroys nothing");
  });

  it("create reads variable_files as CTS's CLI does, and a value like \"1.50\" reaches the module as written", async () => {
    const vars = join(tmp.dir, "vf.tfvars");
    await writeFile(vars, `greeting = "1.50"\npath     = ${JSON.stringify(join(tmp.dir, "vf_echo.txt"))}\n`);
    await writeFile(
      join(tmp.dir, "vf_echo.hcl"),
      `task {\n  name = "vf_echo"\n  module = "./modules/echo"\n  variable_files = [${JSON.stringify(vars)}]\n  condition "services" {\n    names = ["web"]\n  }\n}\n`,
    );
    const r = await cts(["task", "create", "-task-file", join(tmp.dir, "vf_echo.hcl"), "-auto-approve"]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(await read(join(tmp.dir, "vf_echo.txt")), "1.50 web-1,web-2\n");
    assert.equal((await cts(["task", "delete", "vf_echo", "-auto-approve"])).code, 0);
    // The same task as a CTS JSON config file (`"task": [ … ]`), variable_files included.
    await writeFile(join(tmp.dir, "vf_json.tfvars"), `greeting = "007"\npath     = ${JSON.stringify(join(tmp.dir, "vf_json.txt"))}\n`);
    const json = { task: [{ name: "vf_json", module: "./modules/echo", variable_files: [join(tmp.dir, "vf_json.tfvars")], condition: { services: { names: ["web"] } } }] };
    await writeFile(join(tmp.dir, "vf_json.json"), JSON.stringify(json));
    const j = await cts(["task", "create", "-task-file", join(tmp.dir, "vf_json.json"), "-auto-approve"]);
    assert.equal(j.code, 0, j.stderr);
    assert.equal(await read(join(tmp.dir, "vf_json.txt")), "007 web-1,web-2\n");
    assert.equal((await cts(["task", "delete", "vf_json", "-auto-approve"])).code, 0);
  });

  it("fails with a message and CTS's exit code (11) for unknown tasks, bad task files and an unreachable daemon", async () => {
    const unknown = await cts(["task", "enable", "nope"]);
    assert.equal(unknown.code, 11);
    assert.match(unknown.stderr, /no task named 'nope'/);
    await writeFile(join(tmp.dir, "bad.hcl"), hclTask("bad", `variable_files = ["no-such.tfvars"]`));
    const bad = await cts(["task", "create", "--task-file", join(tmp.dir, "bad.hcl"), "--auto-approve"]);
    assert.equal(bad.code, 11);
    assert.match(bad.stderr, /bad\.hcl:\d+: cannot read variable file 'no-such\.tfvars'/);
    const invalid = await cts(["task", "delete", "../x", "--auto-approve"]);
    assert.equal(invalid.code, 11);
    assert.match(invalid.stderr, /not a valid task name/);
    const busy = await cts(["watch", "--config", join(tmp.dir, "cts.config.ts"), "--api-port", address.split(":")[1]!]);
    assert.equal(busy.code, 2, "a second daemon on the same port stops at once");
    assert.match(busy.stderr, /Cannot serve the API on 127\.0\.0\.1:\d+: the port is in use/);
    const down = await cts(["task", "list", "--http-addr", `http://127.0.0.1:${await freePort()}`]);
    assert.equal(down.code, 11);
    assert.match(down.stderr, /Cannot reach cts at http:\/\/127\.0\.0\.1:\d+ \(ECONNREFUSED\)/);
  });

  it("a task nested past 64 levels is refused by the daemon (400, exit 11) and task list keeps working", async () => {
    const nest = (n: number) => "[".repeat(n) + "1" + "]".repeat(n);
    await writeFile(join(tmp.dir, "deep.hcl"), hclTask("deep_echo", `\n  # not a variable of the module: the depth is refused first\n`).replace("variables = {", `variables = {\n    v = ${nest(100)}`));
    const r = await cts(["task", "create", "--task-file", join(tmp.dir, "deep.hcl"), "--auto-approve"]);
    assert.equal(r.code, 11, r.stderr);
    assert.match(r.stderr, /nests deeper than 64 levels/);
    const list = await cts(["task", "list", "--json"]);
    assert.equal(list.code, 0, list.stderr);
    assert.ok(!JSON.parse(list.stdout).tasks.some((t: { name: string }) => t.name === "deep_echo"), "nothing was stored");
    assert.equal(await exists(join(tmp.dir, "deep_echo.txt")), false);
  });

  it("the daemon registered itself in Consul and deregisters on SIGTERM", async () => {
    const services = await consul.api("GET", "/v1/agent/services");
    assert.equal(services["cts-cli-test"]?.Service, "consul-terraform-sync");
    assert.equal(services["cts-cli-test"]?.Port, Number(address.split(":")[1]));
    const exited = new Promise<number | null>((r) => daemon.once("exit", (code) => r(code)));
    daemon.kill("SIGTERM");
    assert.equal(await exited, 0, log);
    assert.equal((await consul.api("GET", "/v1/agent/services"))["cts-cli-test"], undefined);
    assert.match(log, /deregistered service id 'cts-cli-test'/);
  });
});
