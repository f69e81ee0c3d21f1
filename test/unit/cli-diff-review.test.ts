import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Lexer, marked, type Tokens } from "marked";
import { linkedProject } from "../support/project.ts";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const CTS = join(ROOT, "bin/cts.js");

function run(cmd: string, args: string[], cwd: string): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) =>
    execFile(cmd, args, { cwd, env: { ...process.env, GIT_AUTHOR_NAME: "t", GIT_AUTHOR_EMAIL: "t@example.com", GIT_COMMITTER_NAME: "t", GIT_COMMITTER_EMAIL: "t@example.com" } }, (err, stdout, stderr) =>
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    ),
  );
}

/**
 * The issue's firewall: an ingress rule per instance of the services named, on the port given, on
 * the security group the task looks up; `debug` adds a rule open to the world.
 */
function firewall(opts: { port: number; names: string[]; debug?: boolean }): string {
  return `import { Construct } from "constructs";
import { DataAwsSecurityGroup } from "@cdktf/provider-aws/lib/data-aws-security-group/index.js";
import { VpcSecurityGroupIngressRule } from "@cdktf/provider-aws/lib/vpc-security-group-ingress-rule/index.js";
import { Task, services, constructId, type ServicesCondition, type TaskInput, type TaskScope } from "cdktf-sync";

export class Firewall extends Task<ServicesCondition> {
  constructor() {
    super({ name: "firewall", condition: services({ names: ${JSON.stringify(opts.names)} }) });
  }
  synthesize(scope: TaskScope, input: TaskInput<ServicesCondition>): void {
    const sg = new DataAwsSecurityGroup(scope, "lb", { name: "lb" });
    const allow = new Construct(scope, "allow");
    for (const s of input.services)
      new VpcSecurityGroupIngressRule(allow, constructId(s.name, s.id), { securityGroupId: sg.id, cidrIpv4: \`\${s.address}/32\`, fromPort: ${opts.port}, toPort: ${opts.port}, ipProtocol: "tcp", description: s.meta.owner ?? "" });
${opts.debug ? `    new VpcSecurityGroupIngressRule(scope, "debug-anywhere", { securityGroupId: sg.id, cidrIpv4: "0.0.0.0/0", fromPort: 22, toPort: 22, ipProtocol: "tcp" });\n` : ""}  }
}
`;
}

describe("cts diff shows a firewall change with its values (a real git repository, three commits)", () => {
  let project: string;
  const git = async (...args: string[]) => {
    const r = await run("git", args, project);
    assert.equal(r.code, 0, `git ${args.join(" ")}: ${r.stderr}`);
  };
  const cts = (...args: string[]) => run("node", [CTS, ...args], project);

  before(async () => {
    project = await linkedProject("diff-review", ["tasks"], ["@cdktf", "constructs"]);
    await writeFile(join(project, ".gitignore"), "node_modules\n");
    await writeFile(join(project, "cts.config.ts"), `import { defineConfig } from "cdktf-sync";\nimport { Firewall } from "./tasks/firewall.ts";\nexport default defineConfig({ tasks: [new Firewall()] });\n`);
    // An owner text in the catalog that would end a code block and open HTML in a comment.
    const snapshot = {
      services: [
        { name: "web", id: "web-1", address: "10.0.0.1", meta: { owner: "team-web" } },
        { name: "api", id: "api-1", address: "10.0.0.2", meta: { owner: "```</details><img src=x>" } },
      ],
    };
    await writeFile(join(project, "snapshot.json"), JSON.stringify(snapshot));
    await writeFile(join(project, "tasks", "firewall.ts"), firewall({ port: 443, names: ["web", "api"] }));
    await git("init", "-q", "-b", "main");
    await git("add", ".");
    await git("commit", "-q", "-m", "web and api on 443");
    // The change under review: 8443, api's rule gone, a debug rule open to the world.
    await writeFile(join(project, "tasks", "firewall.ts"), firewall({ port: 8443, names: ["web"], debug: true }));
    await git("commit", "-q", "-am", "8443, no api, debug");
    // A later commit, also checked out: --head compares two refs whatever the working tree holds.
    await writeFile(join(project, "tasks", "firewall.ts"), firewall({ port: 9443, names: ["web"], debug: true }));
    await git("commit", "-q", "-am", "9443");
  });
  after(async () => {
    if (project) await rm(project, { recursive: true, force: true });
  });

  it("shows the port change as 443 → 8443, the open CIDR with its value and the removed rule, by the names the task gave (exit 2)", async () => {
    const r = await cts("diff", "--base", "HEAD~2", "--head", "HEAD~1", "--snapshot", "snapshot.json");
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stdout, /^Comparing HEAD~2 with HEAD~1 over snapshot\.json\.$/m);
    assert.match(r.stdout, /^Task firewall: 1 to add, 1 to change, 1 to remove$/m);
    assert.match(r.stdout, /^ {2}- allow\/api-api-1 \(aws_vpc_security_group_ingress_rule\.allow_api-api_2d_1_[0-9A-F]{8}\)\n(?: {6}.*\n)*? {6}cidr_ipv4: "10\.0\.0\.2\/32"$/m);
    assert.match(r.stdout, /^ {2}~ allow\/web-web-1 \(aws_vpc_security_group_ingress_rule\.allow_web-web_2d_1_[0-9A-F]{8}\)\n {6}from_port: 443 → 8443\n {6}to_port: 443 → 8443$/m);
    assert.match(r.stdout, /^ {2}\+ aws_vpc_security_group_ingress_rule\.debug-anywhere\n(?: {6}.*\n)*? {6}cidr_ipv4: "0\.0\.0\.0\/0"\n(?: {6}.*\n)*? {6}from_port: 22\n/m);
    assert.match(r.stdout, /^ {6}security_group_id: "\$\{data\.aws_security_group\.lb\.id\}"$/m, "a reference reads as Terraform's");
  });

  it("writes a Markdown comment that renders to a table, the task's details and a diff block holding the catalog text", async () => {
    const r = await cts("diff", "--base", "HEAD~2", "--head", "HEAD~1", "--snapshot", "snapshot.json", "--format", "markdown");
    assert.equal(r.code, 2, r.stderr);
    const tokens = new Lexer({ gfm: true }).lex(r.stdout);
    const html = marked.parse(r.stdout, { gfm: true, async: false }) as string;
    assert.equal((tokens[0] as Tokens.Heading).text, "cts diff: `HEAD~2` → `HEAD~1`");
    const table = tokens.find((t): t is Tokens.Table => t.type === "table")!;
    assert.deepEqual(table.rows.map((row) => row.map((c) => c.text)), [["`firewall`", "changed", "1", "1", "1"]]);
    assert.match(html, /<details open><summary><code>firewall<\/code>: changed: 1 to add, 1 to change, 1 to remove<\/summary>/);
    const [block] = tokens.filter((t): t is Tokens.Code => t.type === "code");
    assert.equal(block!.lang, "diff");
    const lines = block!.text.split("\n");
    assert.ok(lines.includes("    from_port: 443 → 8443"), block!.text);
    assert.ok(lines.includes('+   cidr_ipv4: "0.0.0.0/0"'), block!.text);
    assert.ok(lines.some((l) => /^- allow\/api-api-1 \(/.test(l)), block!.text);
    assert.ok(block!.text.includes('-   description: "```</details><img src=x>"'), "the removed rule's catalog text as it is, inside the block");
    assert.ok(!/<img/.test(html) && (html.match(/<\/details>/g) ?? []).length === 1, "nothing of it became HTML");
  });

  it("compares against the working tree without --head, and reports the same as JSON", async () => {
    const r = await cts("diff", "--base", "HEAD~1", "--snapshot", "snapshot.json", "--format", "json");
    assert.equal(r.code, 2, r.stderr);
    const report = JSON.parse(r.stdout);
    assert.equal(report.head, undefined);
    const [task] = report.tasks;
    assert.equal(task.status, "changed");
    const [rule] = task.changes;
    assert.match(rule.address, /^aws_vpc_security_group_ingress_rule\.allow_web-web_2d_1_[0-9A-F]{8}$/);
    assert.equal(rule.name, "allow/web-web-1");
    assert.deepEqual(rule.changes, [
      { path: "from_port", before: "8443", after: "9443" },
      { path: "to_port", before: "8443", after: "9443" },
    ]);
  });

  it("exits 0 when the two refs synthesize the same, and 1 (not 2) for a head ref git does not know", async () => {
    const same = await cts("diff", "--base", "HEAD", "--head", "main", "--snapshot", "snapshot.json");
    assert.equal(same.code, 0, same.stderr);
    assert.match(same.stdout, /Task firewall: no changes/);
    const bad = await cts("diff", "--head", "no-such-ref", "--snapshot", "snapshot.json");
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /cannot read the head ref 'no-such-ref'/);
  });
});
