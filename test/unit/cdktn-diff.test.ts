import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { linkedProject } from "../support/project.ts";

const CTS = fileURLToPath(new URL("../../bin/cts.js", import.meta.url));

function run(cmd: string, args: string[], cwd: string): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) =>
    execFile(cmd, args, { cwd, env: { ...process.env, GIT_AUTHOR_NAME: "t", GIT_AUTHOR_EMAIL: "t@example.com", GIT_COMMITTER_NAME: "t", GIT_COMMITTER_EMAIL: "t@example.com" } }, (err, stdout, stderr) =>
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    ),
  );
}

/** A cdktn task: one terraform_data per instance, each referencing the first; `port` adds the port. */
function taskSource(port: boolean): string {
  return `import { DataResource, Fn } from "cdktn";
import { Task, services, type ServicesCondition, type TaskInput, type TaskScope } from "cdktf-sync";

export class Pool extends Task<ServicesCondition> {
  constructor() {
    super({ name: "pool", condition: services({ names: ["web"] }) });
  }
  synthesize(scope: TaskScope, input: TaskInput<ServicesCondition>): void {
    const head = new DataResource(scope, "head", { input: Fn.upper("web") });
    for (const s of input.services) new DataResource(scope, s.id, { input: { member: s.address${port ? ' + ":" + s.port' : ""}, head: head.id } });
  }
}
`;
}

describe("cts diff of a cdktn task between two commits", () => {
  let project: string;
  let snapshot: string;
  const git = (...args: string[]) => run("git", args, project);
  const cts = (...args: string[]) => run("node", [CTS, ...args], project);

  before(async () => {
    project = await linkedProject("cdktn-diff", ["tasks"], ["cdktn", "constructs"]);
    await writeFile(join(project, ".gitignore"), "node_modules\nsnapshot.json\n");
    await writeFile(join(project, "cts.config.ts"), `import { defineConfig } from "cdktf-sync";\nimport { Pool } from "./tasks/pool.ts";\nexport default defineConfig({ tasks: [new Pool()] });\n`);
    await writeFile(join(project, "tasks", "pool.ts"), taskSource(false));
    snapshot = join(project, "snapshot.json");
    await writeFile(snapshot, JSON.stringify({ services: [{ name: "web", id: "web-1", address: "10.0.0.1", port: 80 }] }));
    for (const args of [["init", "-q", "-b", "main"], ["add", "."], ["commit", "-q", "-m", "first"]]) assert.equal((await git(...args)).code, 0);
    await writeFile(join(project, "tasks", "pool.ts"), taskSource(true));
  });
  after(async () => {
    await rm(project, { recursive: true, force: true });
  });

  it("synthesizes the cdktn task with live references on both sides and names the changed attribute", async () => {
    const synth = await cts("synth", "--snapshot", snapshot, "--stdout");
    assert.equal(synth.code, 0, synth.stderr);
    const json = JSON.parse(synth.stdout);
    assert.equal(json.resource.terraform_data["web-1"].input.head, "${terraform_data.head.id}");
    assert.equal(json.resource.terraform_data.head.input, '${upper("web")}');
    const r = await cts("diff", "--base", "HEAD", "--snapshot", snapshot);
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stdout, /~ terraform_data\.web-1\n\s+input\.member: "10\.0\.0\.1" → "10\.0\.0\.1:80"/);
  });
});
