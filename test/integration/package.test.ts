// cts as a user gets it: `npm pack`, the tarball installed into a project OUTSIDE this repository,
// `cts init`, a strict type-check, the scaffolded unit test, then synth/doctor/once against a real
// Consul and OpenTofu. One installed project serves every step (installing is the slow part).
import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFile, spawn } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { delimiter, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { startConsul, type ConsulAgent } from "../support/consul.ts";
import { freePort } from "../support/ports.ts";
import { tools } from "../support/tools.ts";
import { waitFor } from "../support/cts.ts";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));

interface Ran {
  code: number;
  stdout: string;
  stderr: string;
}

// The environment of a user's shell: none of the variables `npm test` and node's test runner set
// for this package (NODE_TEST_CONTEXT would make the project's own `node --test` report to us).
const userEnv = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^npm_(package|lifecycle)_|^INIT_CWD$|^NODE_TEST_CONTEXT$/.test(k))) as Record<string, string>;

function run(cmd: string, args: string[], cwd: string, env: Record<string, string> = {}, timeoutMs = 300_000): Promise<Ran> {
  return new Promise((resolve) =>
    execFile(cmd, args, { cwd, env: { ...userEnv, ...env }, timeout: timeoutMs, maxBuffer: 64 * 1024 * 1024 }, (err, stdout, stderr) =>
      resolve({ code: err ? (typeof (err as { code?: unknown }).code === "number" ? ((err as { code: number }).code) : 1) : 0, stdout, stderr }),
    ),
  );
}

const show = (r: Ran) => `exit ${r.code}\n--- stdout ---\n${r.stdout.slice(-4000)}\n--- stderr ---\n${r.stderr.slice(-4000)}`;

describe("the published package, installed into a new project", { timeout: 900_000 }, () => {
  let work: string;
  let project: string;
  let tarball: string;
  let packed: { files: Array<{ path: string }> };
  let consul: ConsulAgent;
  let runtimeEnv: Record<string, string>;

  before(async () => {
    work = await mkdtemp(join(tmpdir(), "cts-package-"));
    assert.ok(!work.startsWith(ROOT), "the project lives outside the repository");
    // `npm pack` runs prepack (the build) first.
    const pack = await run("npm", ["pack", "--json", "--pack-destination", work], ROOT);
    assert.equal(pack.code, 0, show(pack));
    packed = (JSON.parse(pack.stdout.slice(pack.stdout.indexOf("["))) as Array<typeof packed & { filename: string }>)[0]!;
    tarball = join(work, (packed as unknown as { filename: string }).filename);
    project = join(work, "my-sync");
    await run("mkdir", ["-p", project], work);
    // As most Node projects start: `npm init -y` (current npm writes "type": "commonjs" and a failing
    // test script), install the package, then let `cts init` write the rest.
    const npmInit = await run("npm", ["init", "-y"], project);
    assert.equal(npmInit.code, 0, show(npmInit));
    const install = await run("npm", ["install", "--prefer-offline", "--no-audit", "--no-fund", tarball], project);
    assert.equal(install.code, 0, show(install));
    const init = await run("npx", ["--no-install", "cts", "init"], project);
    assert.equal(init.code, 0, show(init));
    assert.match(init.stdout, /updated package\.json: added scripts\.typecheck, dependencies\./);
    // npm's placeholders are replaced, and said so: nothing in package.json changes silently.
    const pkg = JSON.parse(await readFile(join(project, "package.json"), "utf8")) as { type?: string };
    if (JSON.parse(npmInit.stdout.slice(npmInit.stdout.indexOf("{"))).type === "commonjs") assert.match(init.stdout, /changed "type": "commonjs" → "module"/);
    assert.equal(pkg.type, "module");
    assert.match(init.stdout, /changed scripts\.test: npm init's placeholder → "node --import tsx --import cdktf-sync\/register --test test\/\*\.test\.ts"/);
    const deps = await run("npm", ["install", "--prefer-offline", "--no-audit", "--no-fund"], project);
    assert.equal(deps.code, 0, show(deps));

    const t = tools();
    consul = await startConsul();
    await consul.register({ ID: "web-1", Name: "web", Address: "10.1.1.1", Port: 8080 });
    // tofu first on PATH (the config names no binary), the offline provider mirror, the test agent.
    runtimeEnv = { PATH: `${dirname(t.tofu)}${delimiter}${process.env.PATH ?? ""}`, TF_CLI_CONFIG_FILE: t.cliConfig, CONSUL_HTTP_ADDR: consul.address };
  });

  after(async () => {
    await consul?.stop();
    if (work) await rm(work, { recursive: true, force: true });
  });

  it("ships dist, templates, modules, the docs and examples the README links, README, ARCHITECTURE and LICENSE, and nothing else", () => {
    const paths = packed.files.map((f) => f.path);
    const outside = paths.filter((p) => !/^(dist|templates|modules|docs|examples)\//.test(p) && !["package.json", "README.md", "ARCHITECTURE.md", "LICENSE"].includes(p));
    assert.deepEqual(outside, []);
    for (const must of ["LICENSE", "README.md", "dist/index.js", "dist/index.d.ts", "dist/cli/main.js", "dist/synth/worker-boot.mjs", "dist/api/ui/index.html", "dist/api/ui/app.js", "dist/api/ui/app.css", "templates/init/task.ts.hbs"])
      assert.ok(paths.includes(must), `${must} is in the tarball`);
    assert.ok(!paths.some((p) => p.endsWith(".ts") && !p.endsWith(".d.ts") && !p.startsWith("templates/") && !p.startsWith("examples/")), "no TypeScript sources");
  });

  it("scaffolds a project that type-checks strictly and whose unit test passes (with cdktf-sync/register)", async () => {
    const tsconfig = await readFile(join(project, "tsconfig.json"), "utf8");
    // The packages' own .d.ts files are not checked (provider-aws alone takes a minute); the project's code is.
    assert.match(tsconfig, /"skipLibCheck": true/);
    const tsc = await run("npx", ["--no-install", "tsc", "--noEmit"], project);
    assert.equal(tsc.code, 0, show(tsc));
    const test = await run("npm", ["test"], project);
    assert.equal(test.code, 0, show(test));
    assert.match(test.stdout, /^(ℹ|#) pass 1$/m, show(test));
  });

  it("refuses deep imports: the public surface is the package root (and cdktf-sync/register)", async () => {
    for (const deep of ["cdktf-sync/src/index.ts", "cdktf-sync/dist/index.js", "cdktf-sync/package.json"]) {
      const r = await run(process.execPath, ["--input-type=module", "-e", `await import(${JSON.stringify(deep)})`], project);
      assert.notEqual(r.code, 0, `${deep} must not load`);
      assert.match(r.stderr, /ERR_PACKAGE_PATH_NOT_EXPORTED/);
    }
    const root = await run(process.execPath, ["--input-type=module", "-e", `const m = await import("cdktf-sync"); console.log(typeof m.Task, typeof m.defineConfig)`], project);
    assert.equal(root.stdout.trim(), "function function", show(root));
  });

  it("synthesizes the task from Consul's data", async () => {
    const r = await run("npx", ["--no-install", "cts", "synth", "--stdout"], project, runtimeEnv);
    assert.equal(r.code, 0, show(r));
    const json = JSON.parse(r.stdout);
    assert.equal(Object.values<{ content: string }>(json.resource.local_file)[0]!.content, "10.1.1.1:8080 # web-1\n");
  });

  it("passes every doctor check against the real Consul and OpenTofu", async () => {
    const port = await freePort();
    const r = await run("npx", ["--no-install", "cts", "doctor", "--api-port", String(port)], project, runtimeEnv);
    assert.equal(r.code, 0, show(r));
    for (const check of ["consul", "reads:web-members", "state", "session", "working-dir", "terraform", "providers", "api-port"])
      assert.match(r.stdout, new RegExp(`^✓ ${check}: `, "m"), `${check} passed`);
    assert.match(r.stdout, /✓ terraform: .*tofu \(version /);
    const json = await run("npx", ["--no-install", "cts", "doctor", "--json", "--api-port", String(port)], project, { ...runtimeEnv, CONSUL_HTTP_ADDR: "127.0.0.1:1" });
    assert.equal(json.code, 1, "a failed check exits 1");
    const out = JSON.parse(json.stdout) as { ok: boolean; checks: Array<{ name: string; ok: boolean; fix?: string }> };
    assert.equal(out.ok, false);
    assert.match(out.checks.find((c) => c.name === "consul")!.fix!, /start a Consul agent/);
  });

  it("applies the task once with OpenTofu and writes the file", async () => {
    const r = await run("npx", ["--no-install", "cts", "once"], project, runtimeEnv);
    assert.equal(r.code, 0, show(r));
    const file = join(project, "sync-tasks", "web-members", "web-members.txt");
    assert.equal(await waitFor(() => readFile(file, "utf8"), 60_000, "the applied file"), "10.1.1.1:8080 # web-1\n");
  });

  it("watches with its synthesis worker running from dist/, and applies a new instance", async () => {
    const port = await freePort();
    const child = spawn(join(project, "node_modules", ".bin", "cts"), ["watch", "--no-buffer", "--api-port", String(port)], {
      cwd: project,
      env: { ...userEnv, ...runtimeEnv },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    child.stdout.on("data", (d: Buffer) => (output += d.toString()));
    child.stderr.on("data", (d: Buffer) => (output += d.toString()));
    const exited = new Promise<number | string>((resolve) => child.once("exit", (code, signal) => resolve(code ?? signal ?? "unknown")));
    try {
      await consul.register({ ID: "web-2", Name: "web", Address: "10.1.1.2", Port: 8080 });
      const file = join(project, "sync-tasks", "web-members", "web-members.txt");
      await waitFor(async () => (await readFile(file, "utf8")).includes("10.1.1.2:8080 # web-2"), 120_000, `the watched change applied; output:\n${output}`);
    } finally {
      child.kill("SIGTERM");
      assert.equal(await exited, 0, output);
    }
  });

  it("names the line of the project's own task file when its synthesize() throws (cts's frames folded away)", async () => {
    await writeFile(
      join(project, "broken.config.ts"),
      [
        `import { defineConfig, Task, services, type ServicesCondition, type TaskInput, type TaskScope } from "cdktf-sync";`,
        `class Broken extends Task<ServicesCondition> {`,
        `  constructor() { super({ name: "broken", condition: services({ names: ["web"] }) }); }`,
        `  synthesize(_scope: TaskScope, input: TaskInput<ServicesCondition>): void {`,
        `    for (const s of input.services) (s.meta["owner"] as string).trim();`,
        `  }`,
        `}`,
        `export default defineConfig({ tasks: [new Broken()] });`,
        ``,
      ].join("\n"),
    );
    const r = await run("npx", ["--no-install", "cts", "synth", "--stdout", "--config", "broken.config.ts"], project, runtimeEnv);
    assert.notEqual(r.code, 0, show(r));
    assert.match(r.stderr, /synthesize\(\) threw: Cannot read properties of undefined \(reading 'trim'\) at broken\.config\.ts:5:65/, show(r));
    assert.match(r.stderr, /\n {4}at Broken\.synthesize \(broken\.config\.ts:5:65\)/, show(r));
    assert.doesNotMatch(r.stderr, /node_modules/);
    await rm(join(project, "broken.config.ts"));
  });

  it("usage errors exit 2", async () => {
    for (const args of [["init", "--no-such-flag"], ["synth", "--config"], ["init", "--service", "not a name"]]) {
      const r = await run("npx", ["--no-install", "cts", ...args], project);
      assert.equal(r.code, 2, `cts ${args.join(" ")}: ${show(r)}`);
    }
  });

  it("`cts init --service api` adds a task for api to the config; the project still type-checks and tests", async () => {
    const r = await run("npx", ["--no-install", "cts", "init", "--service", "api"], project);
    assert.equal(r.code, 0, show(r));
    assert.match(r.stdout, /created tasks\/api-members\.ts/);
    assert.match(r.stdout, /updated cts\.config\.ts: added ApiMembersTask to tasks/);
    assert.match(await readFile(join(project, "cts.config.ts"), "utf8"), /tasks: \[new WebMembersTask\(\), new ApiMembersTask\(\)\],/);
    const tsc = await run("npx", ["--no-install", "tsc", "--noEmit"], project);
    assert.equal(tsc.code, 0, show(tsc));
    const test = await run("npm", ["test"], project);
    assert.equal(test.code, 0, show(test));
    assert.match(test.stdout, /^(ℹ|#) pass 2$/m, show(test));
  });

  it("the Testing assertions work under vitest and jest too: a pass passes, a miss fails with the nearest resources", async () => {
    // Pinned versions a user would install today; vitest reads the project's TypeScript task as it
    // is, jest (ESM, no transform) a plain JavaScript task.
    const install = await run("npm", ["install", "--prefer-offline", "--no-audit", "--no-fund", "--save-dev", "vitest@3.2.7", "jest@30.5.2"], project);
    assert.equal(install.code, 0, show(install));
    const checks = join(project, "checks");
    await run("mkdir", ["-p", join(checks, "vitest"), join(checks, "jest")], project);
    const data = `{ services: [{ name: "web", id: "web-1", address: "10.0.0.1", port: 8080 }] }`;
    const body = (fw: string) =>
      [
        `describe("the web members task under ${fw}", () => {`,
        `  const json = Testing.synthTask(new WebMembersTask(), ${data});`,
        `  it("has the file with the member", () => { Testing.assertHasResource(json, "local_file", { content: "10.0.0.1:8080 # web-1\\n" }); Testing.assertResourceCount(json, "local_file", 1); Testing.assertProviderConfigured(json, "local"); });`,
        `  it("misses a member that is not there", () => { Testing.assertHasResource(json, "local_file", { content: "10.9.9.9:8080 # web-9\\n" }); });`,
        `});`,
        ``,
      ].join("\n");
    await writeFile(
      join(checks, "vitest", "web-members.test.ts"),
      `import { describe, it } from "vitest";\nimport { Testing } from "cdktf-sync";\nimport { WebMembersTask } from "../../tasks/web-members.ts";\n${body("vitest")}`,
    );
    await writeFile(
      join(checks, "jest", "web-members.test.mjs"),
      [
        `import { file, provider } from "@cdktf/provider-local";`,
        `import { Task, Testing, services, render, constructId } from "cdktf-sync";`,
        `class WebMembersTask extends Task {`,
        `  constructor() { super({ name: "web-members", condition: services({ names: ["web"] }) }); }`,
        `  synthesize(scope, input) {`,
        `    new provider.LocalProvider(scope, "local");`,
        `    new file.File(scope, constructId("web-members", "members"), { filename: "members.txt", content: render("{{#each services}}{{address}}:{{port}} # {{id}}\\n{{/each}}", { services: input.services }) });`,
        `  }`,
        `}`,
        `const it = test;`,
        body("jest"),
      ].join("\n"),
    );
    await writeFile(join(checks, "jest.config.json"), JSON.stringify({ rootDir: ".", transform: {}, testEnvironment: "node", testMatch: ["<rootDir>/jest/*.test.mjs"] }));
    try {
      const vitest = await run("npx", ["--no-install", "vitest", "run", "--root", checks, "--dir", join(checks, "vitest"), "--reporter", "verbose"], project, { CI: "1", NO_COLOR: "1" });
      assert.equal(vitest.code, 1, show(vitest));
      assert.match(vitest.stdout, /✓ .*has the file with the member/, show(vitest));
      assert.match(vitest.stdout + vitest.stderr, /× .*misses a member that is not there/, show(vitest));
      assert.match(vitest.stdout + vitest.stderr, /Tests {2}1 failed \| 1 passed/, show(vitest));
      assert.match(vitest.stdout + vitest.stderr, /AssertionError: Expected a resource of type local_file with .*; the nearest of 1:\s+local_file\.web_2d_members-members:\s+content: expected "10\.9\.9\.9:8080 # web-9\\n", got "10\.0\.0\.1:8080 # web-1\\n"/, show(vitest));

      const jest = await run(process.execPath, ["--experimental-vm-modules", join(project, "node_modules", "jest", "bin", "jest.js"), "-c", join(checks, "jest.config.json")], project, { CI: "1", NO_COLOR: "1", FORCE_COLOR: "0" });
      assert.equal(jest.code, 1, show(jest));
      assert.match(jest.stderr, /✓ has the file with the member/, show(jest));
      assert.match(jest.stderr, /✕ misses a member that is not there/, show(jest));
      assert.match(jest.stderr, /Tests: {7}1 failed, 1 passed, 2 total/, show(jest));
      assert.match(jest.stderr, /Message:\s+Expected a resource of type local_file with .*; the nearest of 1:\s+local_file\.web_2d_members-members:\s+content: expected "10\.9\.9\.9:8080 # web-9\\n", got "10\.0\.0\.1:8080 # web-1\\n"/, show(jest));
    } finally {
      await rm(checks, { recursive: true, force: true });
    }
  });

  it("points a run that cannot reach Consul at `cts doctor`", async () => {
    const r = await run("npx", ["--no-install", "cts", "once"], project, { ...runtimeEnv, CONSUL_HTTP_ADDR: "127.0.0.1:1" });
    assert.equal(r.code, 1, show(r));
    assert.match(r.stderr, /Run `cts doctor`/);
  });
});
