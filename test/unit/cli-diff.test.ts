import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdir, mkdtemp, readFile, rm, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { diffSynthesized } from "../../src/synth/json-diff.ts";
import { readFromSnapshot, takeSnapshot, type Snapshot } from "../../src/synth/snapshot.ts";
import type { ServiceInstance, Source } from "../../src/consul/types.ts";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const CTS = join(ROOT, "bin/cts.js");

function run(cmd: string, args: string[], cwd: string): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) =>
    execFile(cmd, args, { cwd, env: { ...process.env, GIT_AUTHOR_NAME: "t", GIT_AUTHOR_EMAIL: "t@example.com", GIT_COMMITTER_NAME: "t", GIT_COMMITTER_EMAIL: "t@example.com" } }, (err, stdout, stderr) =>
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    ),
  );
}

/** A task class writing one file per passing instance; `extra` adds a second resource, `suffix` changes content. */
function taskSource(opts: { suffix?: string; extra?: boolean }): string {
  return `import { file } from "@cdktf/provider-local";
import { Task, services, render, type ServicesCondition, type TaskInput, type TaskScope } from "cdktf-sync";

export class Members extends Task<ServicesCondition> {
  constructor() {
    super({ name: "members", condition: services({ names: ["web"] }) });
  }
  synthesize(scope: TaskScope, input: TaskInput<ServicesCondition>): void {
    new file.File(scope, "list", { filename: "/tmp/members.txt", content: render("{{#each services}}{{address}}${opts.suffix ?? ""}\\n{{/each}}", { services: input.services }) });
${opts.extra ? `    new file.File(scope, "count", { filename: "/tmp/count.txt", content: String(input.services.length) });\n` : ""}  }
}
`;
}

const CONFIG = `import { defineConfig } from "cdktf-sync";
import { Members } from "./tasks/members.ts";
export default defineConfig({ tasks: [new Members()] });
`;

describe("cts diff in a git repository with two commits of a task class", () => {
  let project: string;
  let snapshot: string;
  const git = (...args: string[]) => run("git", args, project);
  const cts = (...args: string[]) => run("node", [CTS, ...args], project);

  before(async () => {
    await mkdir(join(ROOT, ".cts"), { recursive: true });
    project = await mkdtemp(join(ROOT, ".cts", "diff-"));
    await mkdir(join(project, "tasks"));
    await mkdir(join(project, "node_modules"));
    // The project's installed cdktf-sync is this repository; its providers come along through it.
    await symlink(ROOT, join(project, "node_modules", "cdktf-sync"));
    await symlink(join(ROOT, "node_modules", "@cdktf"), join(project, "node_modules", "@cdktf"));
    await writeFile(join(project, ".gitignore"), "node_modules\nsnapshot.json\n");
    await writeFile(join(project, "package.json"), JSON.stringify({ type: "module" }));
    await writeFile(join(project, "cts.config.ts"), CONFIG);
    await writeFile(join(project, "tasks", "members.ts"), taskSource({}));
    snapshot = join(project, "snapshot.json");
    const snap: Snapshot = { services: [{ name: "web", id: "web-1", address: "10.0.0.1", port: 80 }, { name: "db", id: "db-1", address: "10.0.0.9" }] };
    await writeFile(snapshot, JSON.stringify(snap));
    for (const args of [["init", "-q", "-b", "main"], ["add", "."], ["commit", "-q", "-m", "first"]]) assert.equal((await git(...args)).code, 0);
    await writeFile(join(project, "tasks", "members.ts"), taskSource({ suffix: ":80", extra: true }));
    for (const args of [["commit", "-q", "-am", "second"]]) assert.equal((await git(...args)).code, 0);
  });
  after(async () => {
    await rm(project, { recursive: true, force: true });
  });

  it("exits 0 and says so when the working tree synthesizes what the base ref did", async () => {
    const r = await cts("diff", "--snapshot", snapshot);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /Task members: no changes/);
  });

  it("exits 2 and lists added resources with their attributes and changed ones as attribute: old → new", async () => {
    const r = await cts("diff", "--base", "HEAD~1", "--snapshot", snapshot);
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stdout, /Task members: 1 to add, 1 to change, 0 to remove\n {2}\+ local_file\.count\n {6}content: "1"\n {6}filename: "\/tmp\/count\.txt"\n {2}~ local_file\.list\n {6}content: "10\.0\.0\.1\\n" → "10\.0\.0\.1:80\\n"\n$/);
  });

  it("writes Markdown for a pull request comment: a table of tasks and each task's changes in a diff block", async () => {
    const r = await cts("diff", "--base", "HEAD~1", "--snapshot", snapshot, "--format", "markdown");
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stdout, /^### cts diff: `HEAD~1` → working tree$/m);
    assert.match(r.stdout, /^\| `members` \| changed \| 1 \| 1 \| 0 \|$/m);
    assert.match(r.stdout, /<details open><summary><code>members<\/code>: changed: 1 to add, 1 to change, 0 to remove<\/summary>\n\n```diff\n\+ local_file\.count\n\+ {3}content: "1"\n\+ {3}filename: "\/tmp\/count\.txt"\n~ local_file\.list\n {4}content: "10\.0\.0\.1\\n" → "10\.0\.0\.1:80\\n"\n```\n\n<\/details>/);
  });

  it("reports as JSON, and the base is read from git, not from the working tree (the repository is left alone)", async () => {
    const r = await cts("diff", "--base", "HEAD~1", "--snapshot", snapshot, "--format", "json");
    assert.equal(r.code, 2, r.stderr);
    const report = JSON.parse(r.stdout);
    assert.equal(report.changed, true);
    assert.deepEqual(report.tasks, [
      {
        task: "members",
        status: "changed",
        changes: [
          { address: "local_file.count", action: "add", attributes: [{ path: "content", value: '"1"' }, { path: "filename", value: '"/tmp/count.txt"' }] },
          { address: "local_file.list", action: "change", paths: ["content"], changes: [{ path: "content", before: '"10.0.0.1\\n"', after: '"10.0.0.1:80\\n"' }] },
        ],
      },
    ]);
    assert.equal((await git("status", "--porcelain")).stdout, "");
    assert.equal((await git("worktree", "list")).stdout.trim().split("\n").length, 1);
  });

  it("an uncommitted change shows against HEAD (the default base)", async () => {
    const file = join(project, "tasks", "members.ts");
    const committed = await readFile(file, "utf8");
    await writeFile(file, taskSource({ suffix: ":80" }));
    try {
      const r = await cts("diff", "--snapshot", snapshot);
      assert.equal(r.code, 2, r.stderr);
      assert.match(r.stdout, /0 to add, 0 to change, 1 to remove\n {2}- local_file\.count\n {6}content: "1"/);
    } finally {
      await writeFile(file, committed);
    }
  });

  it("a ref git does not know exits 1 with the fix, not 2 (which means changes)", async () => {
    const r = await cts("diff", "--base", "no-such-ref", "--snapshot", snapshot);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /cannot read the base ref 'no-such-ref'/);
  });

  it("`cts synth --snapshot` (and its first name --input) synthesizes from the snapshot", async () => {
    for (const flag of ["--snapshot", "--input"]) {
      const r = await cts("synth", flag, snapshot, "--stdout");
      assert.equal(r.code, 0, r.stderr);
      assert.equal(JSON.parse(r.stdout).resource.local_file.list.content, "10.0.0.1:80\n");
    }
  });
});

describe("json diff", () => {
  const doc = (resource: object, extra: object = {}) => JSON.stringify({ "//": { metadata: { stack: "x" } }, resource, ...extra });

  it("ignores cdktf's // metadata and names nested attribute paths, with each value before and after", () => {
    const a = doc({ t: { n: { "//": { metadata: { path: "x/n" } }, tags: { env: "dev" }, list: [1, 2], rule: [{ port: 1 }] } } });
    const b = doc({ t: { n: { "//": { metadata: { path: "x/n" } }, tags: { env: "prod", "a.b": "c" }, list: [1, 3, 4], rule: [{ port: 2 }, { port: 3 }] } } }, { output: { o: { value: 1 } } });
    assert.deepEqual(diffSynthesized(a, b), [
      { address: "output.o", action: "add", attributes: [{ path: "value", value: "1" }] },
      {
        address: "t.n",
        action: "change",
        paths: ["list", "rule[0].port", "rule[1].port", "tags.env", 'tags["a.b"]'],
        changes: [
          { path: "list", before: "[1,2]", after: "[1,3,4]" },
          { path: "rule[0].port", before: "1", after: "2" },
          { path: "rule[1].port", after: "3" },
          { path: "tags.env", before: '"dev"', after: '"prod"' },
          { path: 'tags["a.b"]', after: '"c"' },
        ],
      },
    ]);
  });

  it("a task on one side only is all additions or all removals", () => {
    const a = doc({ t: { n: {} } }, { data: { d: { x: {} } } });
    assert.deepEqual(diffSynthesized(undefined, a).map((c) => `${c.action} ${c.address}`), ["add data.d.x", "add t.n"]);
    assert.deepEqual(diffSynthesized(a, undefined).map((c) => `${c.action} ${c.address}`), ["remove data.d.x", "remove t.n"]);
  });
});

describe("snapshot round trip", () => {
  const original: Snapshot = {
    services: [
      { name: "web", id: "web-1", address: "10.0.0.1", port: 80, tags: ["prod"] },
      { name: "web", id: "web-2", address: "10.0.0.2", port: 80, status: "critical" },
      { name: "api", id: "api-1", address: "10.0.0.3", port: 9000 },
    ],
    kv: { "cfg/a": "1", "cfg/b": "2", other: "3" },
  };
  const sources: Source[] = [
    { kind: "services", query: { names: ["web"], userMeta: { team: "x" } } },
    { kind: "services", query: { names: ["web"], passingOnly: false } },
    { kind: "catalog-services", query: { regexp: "^a" } },
    { kind: "consul-kv", query: { path: "cfg/", recurse: true } },
  ];

  it("every source reads from a taken snapshot (after JSON) what it read when the snapshot was taken", async () => {
    const taken = JSON.parse(JSON.stringify(await takeSnapshot(sources, (s) => readFromSnapshot(original, s)))) as Snapshot;
    for (const s of sources) assert.deepEqual(readFromSnapshot(taken, s), readFromSnapshot(original, s), JSON.stringify(s));
    assert.deepEqual(taken.kv, { "cfg/a": "1", "cfg/b": "2" }, "only the keys a task read");
    assert.deepEqual(taken.services!.map((s) => s.id).sort(), ["web-1", "web-2"]);
  });

  it("a source the snapshot has no answer for is served from its instances and keys", async () => {
    const taken = await takeSnapshot(sources, (s) => readFromSnapshot(original, s));
    const asked: Source = { kind: "services", query: { names: ["web"], passingOnly: true } };
    assert.deepEqual((readFromSnapshot(taken, asked) as ServiceInstance[]).map((s) => s.id), ["web-1"]);
  });
});
