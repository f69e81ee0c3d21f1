import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { createServer } from "node:net";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { clientOptionsFrom, resolveHttpAddr } from "../../src/cli/api-client.ts";
import { CTS_EXIT, ctsTaskArgv } from "../../src/cts/cli/flags.ts";
import { taskFromHcl } from "../../src/cli/task-file.ts";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";

const CTS = join(fileURLToPath(new URL("../../", import.meta.url)), "bin/cts.js");
const argv = (...args: string[]) => ctsTaskArgv(["node", "cts", ...args]).slice(2);

/** Runs the real CLI; CTS_* variables of the caller's shell are cleared. */
function cts(args: string[], env: Record<string, string> = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("CTS_")));
  return new Promise((resolve) =>
    execFile("node", [CTS, ...args], { env: { ...clean, ...env } }, (err, stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr })),
  );
}

/** A port nothing listens on (taken, then released). */
async function deadPort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, "127.0.0.1", r));
  const port = (srv.address() as { port: number }).port;
  await new Promise((r) => srv.close(r));
  return port;
}

describe("cts task accepts CTS's flag spellings", () => {
  it("rewrites one- and two-dash spellings, with a space or '=', to the ones commander reads", () => {
    assert.deepEqual(argv("task", "enable", "-http-addr", "http://h:1", "-auto-approve", "web"), ["task", "enable", "--http-addr", "http://h:1", "--auto-approve", "web"]);
    assert.deepEqual(argv("task", "create", "-task-file=task.hcl", "--ca-cert=ca.pem", "-ca-path", "certs", "-client-cert", "c.pem", "-client-key=k.pem"), [
      "task",
      "create",
      "--task-file=task.hcl",
      "--ca-cert=ca.pem",
      "--ca-path",
      "certs",
      "--client-cert",
      "c.pem",
      "--client-key=k.pem",
    ]);
  });

  it("reads Go's boolean forms: -x, -x=true, -x=false, -x=0, and -ssl-verify=false as --no-ssl-verify", () => {
    assert.deepEqual(argv("task", "delete", "-auto-approve=true", "web"), ["task", "delete", "--auto-approve", "web"]);
    assert.deepEqual(argv("task", "delete", "-auto-approve=false", "web"), ["task", "delete", "web"]);
    assert.deepEqual(argv("task", "disable", "-ssl-verify=false", "web"), ["task", "disable", "--no-ssl-verify", "web"]);
    assert.deepEqual(argv("task", "disable", "-ssl-verify=0", "-ssl-verify=T", "web"), ["task", "disable", "--no-ssl-verify", "--ssl-verify", "web"]);
    assert.deepEqual(argv("task", "enable", "-help"), ["task", "enable", "--help"]);
  });

  it("leaves other commands, unknown flags, values and arguments after -- alone", () => {
    assert.deepEqual(argv("watch", "-config", "x"), ["watch", "-config", "x"]);
    assert.deepEqual(argv("task", "disable", "-colour", "web"), ["task", "disable", "-colour", "web"]);
    assert.deepEqual(argv("task", "disable", "--", "-http-addr"), ["task", "disable", "--", "-http-addr"]);
    assert.deepEqual(argv("task", "create", "--task-file", "-odd-name.hcl"), ["task", "create", "--task-file", "-odd-name.hcl"]);
  });

  it("reads CTS_CAPATH and CTS_SSL_VERIFY (Go's ParseBool; an unreadable value is ignored, as in CTS)", () => {
    assert.deepEqual(clientOptionsFrom({}, { CTS_CAPATH: "/certs", CTS_SSL_VERIFY: "false" }), { caPath: "/certs", sslVerify: false });
    assert.deepEqual(clientOptionsFrom({}, { CTS_SSL_VERIFY: "maybe" }), {});
    assert.deepEqual(clientOptionsFrom({ sslVerify: true }, { CTS_SSL_VERIFY: "0" }), {}, "the flag wins over the environment");
    assert.equal(resolveHttpAddr(undefined, { CTS_ADDRESS: "https://cts.example:8558" }), "https://cts.example:8558");
  });
});

describe("task files with variable_files, read as CTS's task create reads them", () => {
  it("loads each .tfvars file in order (later wins), and a variables attribute wins over the files", async () => {
    const dir = await mkdtemp(join(tmpdir(), "cts-tfvars-"));
    try {
      await writeFile(join(dir, "a.tfvars"), `path = "/tmp/a"\nport = 80\ntags = ["x"]\n`);
      await writeFile(join(dir, "b.tfvars"), `# later file\nport = 8080\nzone = { id = "Z1" }\n`);
      const task = await taskFromHcl(
        `task "t" {\n  module = "m"\n  variable_files = [${JSON.stringify(join(dir, "a.tfvars"))}, ${JSON.stringify(join(dir, "b.tfvars"))}]\n  variables = { tags = ["y"] }\n  condition "services" { names = ["web"] }\n}`,
        "t.hcl",
      );
      assert.deepEqual(task.variables, { path: "/tmp/a", port: 8080, tags: ["y"], zone: { id: "Z1" } });
      await writeFile(join(dir, "bad.tfvars"), `x = var.y\n`);
      await assert.rejects(taskFromHcl(`task "t" {\n  variable_files = [${JSON.stringify(join(dir, "bad.tfvars"))}]\n}`, "t.hcl"), /bad\.tfvars:1:\d+: 'var(\.y)?' is an expression/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe("cts task exits with CTS's codes", () => {
  it("14 for a flag it cannot parse", async () => {
    const r = await cts(["task", "disable", "-colour", "web"]);
    assert.equal(r.code, CTS_EXIT.parseFlags, r.stderr);
    assert.match(r.stderr, /unknown option '-colour'/);
    assert.equal((await cts(["task", "disable", "-auto-approve=maybe", "web"])).code, CTS_EXIT.parseFlags);
  });

  it("13 for a missing task name or -task-file", async () => {
    assert.equal((await cts(["task", "disable"])).code, CTS_EXIT.requiredFlags);
    const r = await cts(["task", "create", "-auto-approve"]);
    assert.equal(r.code, CTS_EXIT.requiredFlags, r.stderr);
    assert.match(r.stderr, /--task-file/);
  });

  it("11 when the daemon cannot be reached (CTS_ADDRESS or -http-addr), with the address in the message", async () => {
    const port = await deadPort();
    const viaEnv = await cts(["task", "disable", "web"], { CTS_ADDRESS: `http://127.0.0.1:${port}` });
    assert.equal(viaEnv.code, CTS_EXIT.error, viaEnv.stderr);
    assert.match(viaEnv.stderr, new RegExp(`Cannot reach cts at http://127\\.0\\.0\\.1:${port} \\(ECONNREFUSED\\)`));
    const viaFlag = await cts(["task", "enable", "-http-addr", `http://127.0.0.1:${port}`, "-auto-approve", "web"]);
    assert.equal(viaFlag.code, CTS_EXIT.error, viaFlag.stderr);
    const deprecatedPort = await cts(["task", "disable", "-port", String(port), "web"]);
    assert.equal(deprecatedPort.code, CTS_EXIT.error);
    assert.match(deprecatedPort.stderr, /'-port' is deprecated/);
    assert.match(deprecatedPort.stderr, new RegExp(`127\\.0\\.0\\.1:${port}`));
  });

  it("0 for -help", async () => {
    const r = await cts(["task", "create", "-help"]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /--task-file/);
    assert.match(r.stdout, /--ca-path/);
  });
});

describe("cts start exits with CTS's codes", () => {
  it("15 for a config it cannot load, 14 for a flag it cannot parse", async () => {
    const dir = await mkdtemp(join(tmpdir(), "cts-start-exit-"));
    try {
      const bad = join(dir, "bad.hcl");
      await writeFile(bad, 'task {\n  name = "x"\n  no_such_key = 1\n}\n');
      const config = await cts(["start", "-config-file", bad]);
      assert.equal(config.code, CTS_EXIT.config, config.stderr);
      assert.match(config.stderr, /bad\.hcl:\d+/);
      const flag = await cts(["start", "-no-such-flag"]);
      assert.equal(flag.code, CTS_EXIT.parseFlags, flag.stderr);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
