import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { Fn } from "cdktf";
import { DataAwsSecurityGroup } from "@cdktf/provider-aws/lib/data-aws-security-group/index.js";
import { VpcSecurityGroupIngressRule } from "@cdktf/provider-aws/lib/vpc-security-group-ingress-rule/index.js";
import { ModuleTask, Task, Testing, constructId, services, type ServicesCondition, type TaskInput, type TaskScope } from "../../src/index.ts";

/** Catalog text a Terraform evaluation would run (it reads a file of the machine running tofu). */
const NASTY = '${file("/etc/hostname")}';

/** The allow-list: an ingress rule per instance on the security group the task looks up. */
class AllowList extends Task<ServicesCondition> {
  constructor() {
    super({ name: "allow-list", condition: services({ names: ["web", "api"] }) });
  }
  synthesize(scope: TaskScope, input: TaskInput<ServicesCondition>): void {
    const sg = new DataAwsSecurityGroup(scope, "lb", { name: "lb" });
    for (const s of input.services)
      new VpcSecurityGroupIngressRule(scope, constructId(s.id), {
        securityGroupId: sg.id,
        cidrIpv4: Fn.join("", [s.address, "/32"]),
        fromPort: 443,
        toPort: 443,
        ipProtocol: "tcp",
        description: `${s.name} ${s.meta.owner ?? ""} in ${sg.name}`,
        tags: { owner: s.meta.owner ?? "", group: sg.id },
      });
  }
}

const given = {
  services: [
    { name: "web", id: "web-1", address: "10.0.0.1", meta: { owner: NASTY } },
    { name: "api", id: "api-1", address: "10.0.0.2", meta: { owner: "team %{ if true }x%{ endif }" } },
  ],
};

describe("Testing.assertNoInterpolation tells the task's own expressions from catalog text", () => {
  it("passes on a whole task whose references (sg.id) and Fn calls are live and whose catalog text is literal", () => {
    const json = Testing.synthTask(new AllowList(), given);
    const rule = json.resource.aws_vpc_security_group_ingress_rule["web_2d_1"];
    assert.equal(rule.security_group_id, "${data.aws_security_group.lb.id}");
    assert.match(rule.cidr_ipv4, /^\$\{join\(/);
    assert.equal(rule.tags.owner, "$${file(\"/etc/hostname\")}", "the catalog text is escaped");
    Testing.assertNoInterpolation(json);
    Testing.assertNoInterpolation(json, "aws_vpc_security_group_ingress_rule");
    Testing.assertNoInterpolation(json, "aws_vpc_security_group_ingress_rule", "web_2d_1");
    // The JSON text and synthTaskResult's result carry the same record.
    const result = Testing.synthTaskResult(new AllowList(), given);
    Testing.assertNoInterpolation(result);
    Testing.assertNoInterpolation(result.json);
    // Text written anew is not the text the synthesis recorded: nothing tells its expressions apart.
    assert.throws(() => Testing.assertNoInterpolation(JSON.stringify(json)), /carries no record/);
  });

  it("fails on catalog text that reached the JSON unescaped, naming where and what Terraform would evaluate", () => {
    const json = Testing.synthTask(new AllowList(), given);
    // As if some path had written the catalog value as it is.
    json.resource.aws_vpc_security_group_ingress_rule["web_2d_1"].tags.owner = NASTY;
    assert.throws(
      () => Testing.assertNoInterpolation(json),
      (e: Error) => {
        assert.match(e.message, /not an expression the task wrote/);
        assert.match(e.message, /\n {2}aws_vpc_security_group_ingress_rule\.web_2d_1\.tags\.owner: "\$\{file\(\\"\/etc\/hostname\\"\)\}" evaluates \$\{file\("\/etc\/hostname"\)\}$/);
        assert.doesNotMatch(e.message, /security_group_id|cidr_ipv4/, "the task's own references are not reported");
        return true;
      },
    );
    Testing.assertNoInterpolation(json, "aws_vpc_security_group_ingress_rule", "api_2d_1");
    assert.throws(() => Testing.assertNoInterpolation(json, "aws_vpc_security_group_ingress_rule", "web_2d_1"), /web_2d_1\.tags\.owner/);
  });

  it("judges each expression by where the synthesis wrote it: the task's reference text elsewhere is foreign", () => {
    const json = Testing.synthTask(new AllowList(), given);
    const rule = json.resource.aws_vpc_security_group_ingress_rule["api_2d_1"];
    rule.description = `${rule.description} ${rule.security_group_id}`;
    assert.throws(() => Testing.assertNoInterpolation(json), /api_2d_1\.description: .* evaluates \$\{data\.aws_security_group\.lb\.id\}$/);
    // A second copy in the same string is one more than the task wrote there.
    const again = Testing.synthTask(new AllowList(), given);
    again.resource.aws_vpc_security_group_ingress_rule["web_2d_1"].security_group_id += "${data.aws_security_group.lb.id}";
    assert.throws(() => Testing.assertNoInterpolation(again), /web_2d_1\.security_group_id: .* evaluates \$\{data\.aws_security_group\.lb\.id\}$/);
  });

  it("reports every expression of JSON that carries no record (built by hand), and says why", () => {
    const raw = { resource: { local_file: { x: { content: "a ${var.secret} b", filename: "$${literal}" } } } };
    assert.throws(() => Testing.assertNoInterpolation(raw), /carries no record of the task's own expressions.*\n {2}local_file\.x\.content: "a \$\{var\.secret\} b" evaluates \$\{var\.secret\}$/);
    Testing.assertNoInterpolation({ resource: { local_file: { x: { content: "%%{ if } $${x} $$$${y}" } } } });
    Testing.assertNoInterpolation({ output: { o: { value: "$$${x} %%%{y}", "//": "${not read}" } } });
    assert.throws(() => Testing.assertNoInterpolation({ output: { o: { value: "x ${a[\"}\"]} y" } } }), /output\.o\.value: .* evaluates \$\{a\["\}"\]\}$/);
  });

  it("accepts a module task's own provider references, with catalog data literal in the module block", () => {
    const task = new ModuleTask({ name: "mod", module: "./mod", condition: services({ names: ["web"] }), providers: [{ name: "local", config: { x: "1" } }] });
    const json = Testing.synthTask(task, given);
    assert.ok(JSON.stringify(json.provider).includes("${var.local"), "the provider block reads its variable");
    Testing.assertNoInterpolation(json);
  });
});
