// A project whose task root-imports the big AWS binding (`import * as aws from "@cdktf/provider-aws"`,
// 2,200 namespaces): cts synth shows its AWS resources, cts once applies a task that uses AWS classes
// at synthesis time only (the offline provider mirror has no aws provider), and the author's own
// test runs with `--import cdktf-sync/register`, each loading only the namespaces the task uses.
import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFile, spawn } from "node:child_process";
import { readFile, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { startConsul, type ConsulAgent } from "../support/consul.ts";
import { tools } from "../support/tools.ts";
import { waitFor } from "../support/cts.ts";
import { linkedProject } from "../support/project.ts";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const CTS = join(ROOT, "bin/cts.js");

const SECURITY_GROUP_TASK = `import * as aws from "@cdktf/provider-aws";
import { Task, services, type ServicesCondition, type TaskInput, type TaskScope } from "cdktf-sync";

/** One ingress rule per passing 'web' instance, in a security group of the default VPC. */
export class WebSecurityGroup extends Task<ServicesCondition> {
  constructor() {
    super({ name: "web-sg", condition: services({ names: ["web"] }) });
  }
  synthesize(scope: TaskScope, input: TaskInput<ServicesCondition>): void {
    new aws.provider.AwsProvider(scope, "aws", { region: "eu-west-1" });
    const vpc = new aws.dataAwsVpc.DataAwsVpc(scope, "vpc", { default: true });
    const sg = new aws.securityGroup.SecurityGroup(scope, "web", { name: "web", vpcId: vpc.id });
    for (const s of input.services)
      new aws.vpcSecurityGroupIngressRule.VpcSecurityGroupIngressRule(scope, s.id, { securityGroupId: sg.id, cidrIpv4: s.address + "/32", ipProtocol: "tcp", fromPort: s.port, toPort: s.port });
  }
}
`;

// Applies here: AWS classes are read at synthesis time, the resources are local_file and terraform_data.
const LOCAL_TASK = `import * as aws from "@cdktf/provider-aws";
import { file, provider } from "@cdktf/provider-local";
import { DataResource } from "cdktf";
import { createRequire } from "node:module";
import { Task, services, type ServicesCondition, type TaskInput, type TaskScope } from "cdktf-sync";

/** Writes which AWS resource types the 'web' instances would need, and how much of the binding loaded. */
export class AwsTypes extends Task<ServicesCondition> {
  constructor(private readonly out: string) {
    super({ name: "aws-types", condition: services({ names: ["web"] }) });
  }
  synthesize(scope: TaskScope, input: TaskInput<ServicesCondition>): void {
    new provider.LocalProvider(scope, "local");
    const types = [aws.securityGroup.SecurityGroup.tfResourceType, aws.vpcSecurityGroupIngressRule.VpcSecurityGroupIngressRule.tfResourceType];
    const loaded = Object.keys(createRequire(import.meta.url).cache).filter((k) => k.includes("/provider-aws/lib/")).length;
    new file.File(scope, "types", { filename: this.out, content: JSON.stringify({ types, instances: input.services.length, loaded }) });
    new DataResource(scope, "marker", { input: types.join(",") });
  }
}
`;

const USER_TEST = `import { it } from "node:test";
import assert from "node:assert/strict";
import { createRequire } from "node:module";
import { Testing } from "cdktf-sync";
import { WebSecurityGroup } from "../tasks/web-sg.ts";

it("opens the port of each web instance", () => {
  const json = Testing.synthTask(new WebSecurityGroup(), { services: [{ name: "web", id: "web-1", node: "n1", address: "10.0.0.7", port: 8080 }] });
  assert.equal(json.resource.aws_vpc_security_group_ingress_rule["web-1"].security_group_id, "\${aws_security_group.web.id}");
  const loaded = Object.keys(createRequire(import.meta.url).cache).filter((k) => k.includes("/provider-aws/lib/"));
  assert.ok(loaded.length <= 7, "the binding loaded lazily: " + loaded.length + " files");
});
`;

describe("a task that root-imports @cdktf/provider-aws", { timeout: 600_000 }, () => {
  let consul: ConsulAgent;
  let project: string;
  // Not this test runner's child-process protocol (NODE_TEST_CONTEXT): the author's `node --test` prints its own report.
  const { NODE_TEST_CONTEXT: _ctx, ...outside } = process.env;
  const run = (args: string[], env: Record<string, string> = {}): Promise<{ code: number; stdout: string; stderr: string }> =>
    new Promise((resolve) =>
      execFile(process.execPath, args, { cwd: project, env: { ...outside, CONSUL_HTTP_ADDR: consul.address, ...env }, maxBuffer: 64 * 1024 * 1024 }, (err, stdout, stderr) =>
        resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
      ),
    );

  before(async () => {
    consul = await startConsul();
    await consul.register({ Name: "web", ID: "web-1", Address: "10.0.0.1", Port: 80 });
    // The package from its sources (bin/cts.js and --conditions=cts-source), the bindings from the repository.
    project = await linkedProject("aws-binding", ["tasks", "test"]);
    const t = tools();
    const driver = { terraform: { binary: t.tofu, cliConfigFile: t.cliConfig, workingDir: "sync-tasks" } };
    await writeFile(join(project, "tasks", "web-sg.ts"), SECURITY_GROUP_TASK);
    await writeFile(join(project, "tasks", "aws-types.ts"), LOCAL_TASK);
    await writeFile(join(project, "test", "web-sg.test.ts"), USER_TEST);
    await writeFile(
      join(project, "cts.config.ts"),
      `import { defineConfig } from "cdktf-sync";\nimport { WebSecurityGroup } from "./tasks/web-sg.ts";\nexport default defineConfig({ driver: ${JSON.stringify(driver)}, tasks: [new WebSecurityGroup()] });\n`,
    );
    await writeFile(
      join(project, "local.config.ts"),
      `import { defineConfig } from "cdktf-sync";\nimport { AwsTypes } from "./tasks/aws-types.ts";\nexport default defineConfig({ driver: ${JSON.stringify(driver)}, tasks: [new AwsTypes(${JSON.stringify(join(project, "aws-types.json"))})] });\n`,
    );
  });
  after(async () => {
    await consul?.stop();
    if (project) await rm(project, { recursive: true, force: true });
  });

  it("cts synth --stdout shows the AWS resources, references live", async () => {
    const r = await run([CTS, "synth", "--stdout"]);
    assert.equal(r.code, 0, r.stderr);
    const json = JSON.parse(r.stdout);
    assert.equal(json.resource.aws_security_group.web.vpc_id, "${data.aws_vpc.vpc.id}");
    assert.equal(json.resource.aws_vpc_security_group_ingress_rule["web-1"].cidr_ipv4, "10.0.0.1/32");
    assert.equal(json.resource.aws_vpc_security_group_ingress_rule["web-1"].security_group_id, "${aws_security_group.web.id}");
  });

  it("cts once (in process) and cts watch (in the synthesis worker) apply a task that uses AWS classes at synthesis time", async () => {
    const r = await run([CTS, "once", "-c", "local.config.ts"]);
    assert.equal(r.code, 0, `${r.stdout}\n${r.stderr}`);
    const written = JSON.parse(await readFile(join(project, "aws-types.json"), "utf8"));
    assert.deepEqual(written.types, ["aws_security_group", "aws_vpc_security_group_ingress_rule"]);
    assert.equal(written.instances, 1);
    // The lazy root (index.js's place in the cache, lazy-index.js) and two namespaces, of 2,200.
    assert.ok(written.loaded <= 6, `cts once loaded ${written.loaded} files of provider-aws`);

    // The daemon: a new instance makes the worker synthesize the task again.
    await rm(join(project, "aws-types.json"));
    await consul.register({ Name: "web", ID: "web-2", Address: "10.0.0.2", Port: 80 });
    const daemon = spawn(process.execPath, [CTS, "watch", "--no-buffer", "-c", "local.config.ts", "--api-port", "0"], { cwd: project, env: { ...outside, CONSUL_HTTP_ADDR: consul.address }, stdio: ["ignore", "pipe", "pipe"] });
    let log = "";
    daemon.stdout!.on("data", (d) => (log += d));
    daemon.stderr!.on("data", (d) => (log += d));
    try {
      await waitFor(() => /task 'aws-types': applied/.test(log), 120_000, "the daemon's applied run").catch((err: Error) => {
        throw new Error(`${err.message}\nthe daemon's log:\n${log}`);
      });
      const fromWorker = JSON.parse(await readFile(join(project, "aws-types.json"), "utf8"));
      assert.equal(fromWorker.instances, 2);
      assert.ok(fromWorker.loaded <= 6, `the synthesis worker loaded ${fromWorker.loaded} files of provider-aws`);
    } finally {
      const exited = new Promise((r) => daemon.once("exit", r));
      daemon.kill("SIGTERM");
      await exited;
    }
  });

  it("the author's own test runs with --import cdktf-sync/register", async () => {
    const r = await run(["--conditions=cts-source", "--import", "tsx", "--import", "cdktf-sync/register", "--test", "test/web-sg.test.ts"]);
    assert.equal(r.code, 0, `${r.stdout}\n${r.stderr}`);
    assert.match(r.stdout, /^(ℹ|#) pass 1$/m);
  });

  it("cts diff reviews a change to the AWS task against a git ref (the base unpacked and loaded lazily too)", async () => {
    const env = { GIT_AUTHOR_NAME: "t", GIT_AUTHOR_EMAIL: "t@example.com", GIT_COMMITTER_NAME: "t", GIT_COMMITTER_EMAIL: "t@example.com" };
    const git = (...args: string[]) =>
      new Promise<void>((resolve, reject) => execFile("git", args, { cwd: project, env: { ...outside, ...env } }, (err, _o, stderr) => (err ? reject(new Error(`git ${args.join(" ")}: ${stderr}`)) : resolve())));
    await writeFile(join(project, ".gitignore"), "node_modules\nsync-tasks\naws-types.json\n");
    await git("init", "-q", "-b", "main");
    await git("add", ".");
    await git("commit", "-q", "-m", "the task");
    const task = join(project, "tasks", "web-sg.ts");
    await writeFile(task, (await readFile(task, "utf8")).replace("fromPort: s.port, toPort: s.port", "fromPort: s.port + 1, toPort: s.port + 1"));
    const r = await run([CTS, "diff", "--base", "main"]);
    assert.equal(r.code, 2, `${r.stdout}\n${r.stderr}`);
    assert.match(r.stdout, /aws_vpc_security_group_ingress_rule\.web-1/);
  });
});

