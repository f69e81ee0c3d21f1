import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { readFile, rm, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { startConsul, type ConsulAgent } from "../support/consul.ts";
import { pageLines } from "../support/markdown.ts";
import { tools } from "../support/tools.ts";
import { linkedProject } from "../support/project.ts";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const CTS = join(ROOT, "bin/cts.js");

/** The shell lines of docs/tasks.md's "Reviewing a task change" that run cts, comments dropped. */
async function documentedCommands(): Promise<string[][]> {
  const page = await readFile(join(ROOT, "docs/tasks.md"), "utf8");
  const lines = pageLines(page);
  const start = lines.findIndex((l) => l.fence === undefined && l.text === "## Reviewing a task change");
  const end = lines.findIndex((l, i) => i > start && l.fence === undefined && l.text.startsWith("## "));
  return lines
    .slice(start, end)
    .filter((l) => l.fence === "sh" && l.text.startsWith("npx cts "))
    .map((l) => l.text.replace(/\s#.*$/, "").trim().split(/\s+/).slice(2));
}

/** A task class over the `web` instances Consul's filter keeps (tagged prod); `port` adds the port to each line. */
function taskSource(port: boolean): string {
  return `import { file } from "@cdktf/provider-local";
import { Task, services, render, type ServicesCondition, type TaskInput, type TaskScope } from "cdktf-sync";

export class ProdMembers extends Task<ServicesCondition> {
  constructor() {
    super({ name: "prod-members", condition: services({ names: ["web"], filter: 'Service.Tags contains "prod"' }) });
  }
  synthesize(scope: TaskScope, input: TaskInput<ServicesCondition>): void {
    new file.File(scope, "list", { filename: "/tmp/prod.txt", content: render("{{#each services}}{{address}}${port ? ":{{port}}" : ""}\\n{{/each}}", { services: input.services }) });
  }
}
`;
}

describe("reviewing a task change as docs/tasks.md shows it (real Consul, a real git repository)", () => {
  let consul: ConsulAgent;
  let project: string;
  const run = (cmd: string, args: string[]): Promise<{ code: number; stdout: string; stderr: string }> =>
    new Promise((resolve) =>
      execFile(
        cmd,
        args,
        { cwd: project, env: { ...process.env, CONSUL_HTTP_ADDR: consul.address, GIT_AUTHOR_NAME: "t", GIT_AUTHOR_EMAIL: "t@example.com", GIT_COMMITTER_NAME: "t", GIT_COMMITTER_EMAIL: "t@example.com" } },
        (err, stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
      ),
    );
  const cts = (args: string[]) => run("node", [CTS, ...args]);
  const git = async (...args: string[]) => assert.equal((await run("git", args)).code, 0, `git ${args.join(" ")}`);

  before(async () => {
    consul = await startConsul();
    await consul.register({ Name: "web", ID: "web-1", Address: "10.0.0.1", Port: 80, Tags: ["prod"] });
    await consul.register({ Name: "web", ID: "web-2", Address: "10.0.0.2", Port: 80, Tags: ["canary"] });
    project = await linkedProject("review");
    const t = tools();
    const driver = { terraform: { binary: t.tofu, cliConfigFile: t.cliConfig, workingDir: "sync-tasks" } };
    await writeFile(join(project, ".gitignore"), "node_modules\nsync-tasks\n");
    await writeFile(
      join(project, "cts.config.ts"),
      `import { defineConfig } from "cdktf-sync";\nimport { ProdMembers } from "./tasks/prod-members.ts";\nexport default defineConfig({ driver: ${JSON.stringify(driver)}, tasks: [new ProdMembers()] });\n`,
    );
    await writeFile(join(project, "tasks", "prod-members.ts"), taskSource(false));
    await git("init", "-q", "-b", "main");
    await git("add", ".");
    await git("commit", "-q", "-m", "the task");
    // The pull request's branch changes the task class; origin/main is where it started.
    await git("update-ref", "refs/remotes/origin/main", "HEAD");
    await git("checkout", "-q", "-b", "port");
    await writeFile(join(project, "tasks", "prod-members.ts"), taskSource(true));
    await git("commit", "-q", "-am", "with the port");
  });
  after(async () => {
    await consul?.stop();
    if (project) await rm(project, { recursive: true, force: true });
  });

  it("the documented commands save a snapshot (owner-only) and print a Markdown diff of the change, exit 2", async () => {
    const commands = await documentedCommands();
    assert.deepEqual(commands.map((c) => c[0]), ["snapshot", "diff"], "the section shows cts snapshot, then cts diff");
    const snapshot = await cts(commands[0]!);
    assert.equal(snapshot.code, 0, snapshot.stderr);
    assert.equal((await stat(join(project, "snapshot.json"))).mode & 0o777, 0o600);
    const diff = await cts(commands[1]!);
    assert.equal(diff.code, 2, diff.stderr);
    assert.match(diff.stdout, /^### cts diff: `origin\/main` → working tree$/m);
    assert.match(diff.stdout, /^\| `prod-members` \| changed \| 0 \| 1 \| 0 \|$/m);
    assert.match(diff.stdout, /```diff\n~ local_file\.list\n {4}content: "10\.0\.0\.1\\n" → "10\.0\.0\.1:80\\n"\n```/);
  });

  it("the snapshot gives what Consul gives: Consul's filter applied, the same JSON as a live synth", async () => {
    const live = await cts(["synth", "--stdout"]);
    assert.equal(live.code, 0, live.stderr);
    const offline = await cts(["synth", "--snapshot", "snapshot.json", "--stdout"]);
    assert.equal(offline.code, 0, offline.stderr);
    assert.equal(offline.stdout, live.stdout);
    assert.equal(JSON.parse(live.stdout).resource.local_file.list.content, "10.0.0.1:80\n", "only the instance tagged prod");
  });

  it("live Consul without a snapshot: the same result; against the branch itself nothing changes (exit 0)", async () => {
    const changed = await cts(["diff", "--base", "origin/main"]);
    assert.equal(changed.code, 2, changed.stderr);
    assert.match(changed.stdout, /~ local_file\.list\n {6}content: "10\.0\.0\.1\\n" → "10\.0\.0\.1:80\\n"/);
    const same = await cts(["diff", "--base", "port"]);
    assert.equal(same.code, 0, same.stderr);
    assert.match(same.stdout, /Task prod-members: no changes/);
  });

  it("--plan adds Terraform's plan of each changed task against its real state (here: none yet), by address, with the plan's values", async () => {
    const r = await cts(["diff", "--base", "origin/main", "--snapshot", "snapshot.json", "--plan", "--format", "json"]);
    assert.equal(r.code, 2, r.stderr);
    const [task] = JSON.parse(r.stdout).tasks;
    assert.deepEqual({ ...task.plan, resources: task.plan.resources.map((x: { address: string; action: string }) => ({ address: x.address, action: x.action })) }, {
      add: 1,
      change: 0,
      destroy: 0,
      resources: [{ address: "local_file.list", action: "create" }],
    });
    const lines: string[] = task.plan.resources[0].lines;
    assert.equal(lines[0], "# local_file.list will be created");
    assert.ok(lines.some((l) => /^ {4}\+ filename +=  ?"\/tmp\/prod\.txt"$/.test(l)), lines.join("\n"));
    const text = await cts(["diff", "--base", "origin/main", "--snapshot", "snapshot.json", "--plan"]);
    assert.match(text.stdout, /plan against the task's state: 1 to add, 0 to change, 0 to destroy\n {4}\+ local_file\.list \(create\)\n {6}# local_file\.list will be created\n {6}\+ resource "local_file" "list" \{/);
    // --head plans the head ref's version, in the working tree's folders.
    const head = await cts(["diff", "--base", "origin/main", "--head", "port", "--snapshot", "snapshot.json", "--plan", "--format", "json"]);
    assert.equal(head.code, 2, head.stderr);
    const headReport = JSON.parse(head.stdout);
    assert.equal(headReport.head, "port");
    assert.deepEqual(headReport.tasks[0].plan, task.plan);
    const markdown = await cts(["diff", "--base", "origin/main", "--snapshot", "snapshot.json", "--plan", "--format", "markdown"]);
    assert.match(markdown.stdout, /Terraform's plan against the task's state: 1 to add, 0 to change, 0 to destroy:\n\n```diff\n# local_file\.list will be created\n\+ resource "local_file" "list" \{\n/);
  });
});
