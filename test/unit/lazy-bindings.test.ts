import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtemp, mkdir, rm, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { registerLazyBindings } from "../../src/cdktf/lazy-bindings.ts";
import { Task, Testing, services, type ServicesCondition, type TaskInput, type TaskScope } from "../../src/index.ts";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const REGISTER = new URL("../../src/register.ts", import.meta.url).href;
const TSX = import.meta.resolve("tsx");

/**
 * Runs `source` in a fresh node (a clean module cache) as a task author's test runs: tsx, then
 * cdktf-sync/register. What it prints on its last line is parsed as JSON.
 */
function inFreshNode(source: string, opts: { cwd?: string; type?: "module" | "commonjs" } = {}): Promise<any> {
  const args = ["--conditions=cts-source", "--import", TSX, "--import", REGISTER, `--input-type=${opts.type ?? "module"}`, "-e", source];
  return new Promise((resolve, reject) =>
    execFile(process.execPath, args, { cwd: opts.cwd ?? ROOT, maxBuffer: 16 * 1024 * 1024 }, (err, stdout, stderr) => {
      if (err) return reject(new Error(`node exited: ${err.message}\n${stderr}`));
      resolve(JSON.parse(stdout.trim().split("\n").pop()!));
    }),
  );
}

/** Source that defines `loaded(pkg)`: the files under the binding's lib/ in the CommonJS module cache. */
const LOADED = `
const { createRequire } = await import("node:module");
const cache = createRequire(process.cwd() + "/").cache;
const loaded = (pkg) => Object.keys(cache).filter((k) => k.includes("/node_modules/" + pkg + "/lib/")).map((k) => k.split("/lib/")[1]).sort();
`;

describe("a prebuilt binding's root import costs what the task uses", () => {
  it("loads only the namespaces an ES module touches, and gives the real classes", async () => {
    const r = await inFreshNode(`${LOADED}
      const aws = await import("@cdktf/provider-aws");
      const atImport = loaded("@cdktf/provider-aws");
      const { SecurityGroup } = aws.securityGroup;
      const deep = await import("@cdktf/provider-aws/lib/security-group/index.js");
      console.log(JSON.stringify({
        atImport, afterUse: loaded("@cdktf/provider-aws"), keys: Object.keys(aws).length, hasS3: "s3Bucket" in aws,
        same: SecurityGroup === deep.SecurityGroup, type: SecurityGroup.tfResourceType, isConstruct: typeof SecurityGroup.isConstruct,
        nsKeys: Object.keys(aws.securityGroup).includes("SecurityGroup"),
      }));`);
    assert.deepEqual(r.atImport, ["lazy-index.js"], "importing the root loads no namespace");
    assert.deepEqual(r.afterUse, ["lazy-index.js", "security-group/index.js"]);
    assert.equal(r.keys, 2213, "every namespace is a named export, and the default export");
    assert.ok(r.hasS3 && r.same && r.nsKeys);
    assert.equal(r.type, "aws_security_group");
    assert.equal(r.isConstruct, "function");
  });

  it("serves named imports, the default import and the namespace import alike", async () => {
    const r = await inFreshNode(`${LOADED}
      const { s3Bucket } = await import("@cdktf/provider-aws");
      const { default: aws } = await import("@cdktf/provider-aws");
      const star = await import("@cdktf/provider-aws");
      console.log(JSON.stringify({
        named: s3Bucket.S3Bucket.tfResourceType, viaDefault: aws.s3Bucket.S3Bucket === s3Bucket.S3Bucket,
        viaStar: star.s3Bucket.S3Bucket === s3Bucket.S3Bucket, esModule: s3Bucket.__esModule, loaded: loaded("@cdktf/provider-aws"),
      }));`);
    assert.equal(r.named, "aws_s3_bucket");
    assert.ok(r.viaDefault && r.viaStar);
    assert.equal(r.esModule, true, "a namespace shows the module's own properties");
    assert.deepEqual(r.loaded, ["lazy-index.js", "s3-bucket/index.js"]);
  });

  it("loads only the namespaces a CommonJS require touches, and lists them all", async () => {
    const r = await inFreshNode(
      `const aws = require("@cdktf/provider-aws");
      const lib = () => Object.keys(require.cache).filter((k) => k.includes("/provider-aws/lib/")).map((k) => k.split("/lib/")[1]).sort();
      const atRequire = lib();
      const type = aws.dataAwsVpc.DataAwsVpc.tfResourceType;
      console.log(JSON.stringify({ atRequire, afterUse: lib(), type, keys: Object.keys(aws).length, resolved: require.resolve("@cdktf/provider-aws").split("/lib/")[1] }));`,
      { type: "commonjs" },
    );
    assert.deepEqual(r.atRequire, ["index.js"], "the root's place in the cache holds the lazy exports");
    assert.deepEqual(r.afterUse, ["data-aws-vpc/index.js", "index.js", "lazy-index.js"]);
    assert.equal(r.type, "aws_vpc");
    assert.equal(r.keys, 2212);
    assert.equal(r.resolved, "index.js", "the root resolves where it always did");
  });

  it("makes cdktn's bindings lazy too (@cdktn/provider-random)", async () => {
    const r = await inFreshNode(`${LOADED}
      const random = await import("@cdktn/provider-random");
      const atImport = loaded("@cdktn/provider-random");
      const type = random.pet.Pet.tfResourceType;
      const deep = await import("@cdktn/provider-random/lib/pet/index.js");
      console.log(JSON.stringify({ atImport, afterUse: loaded("@cdktn/provider-random"), type, same: deep.Pet === random.pet.Pet }));`);
    assert.deepEqual(r.atImport, ["lazy-index.js"]);
    assert.deepEqual(r.afterUse, ["lazy-index.js", "pet/index.js"]);
    assert.equal(r.type, "random_pet");
    assert.ok(r.same);
  });

  it("leaves a deep import as it is", async () => {
    const r = await inFreshNode(`${LOADED}
      const { S3Bucket } = await import("@cdktf/provider-aws/lib/s3-bucket/index.js");
      console.log(JSON.stringify({ loaded: loaded("@cdktf/provider-aws"), type: S3Bucket.tfResourceType }));`);
    assert.deepEqual(r.loaded, ["s3-bucket/index.js"]);
    assert.equal(r.type, "aws_s3_bucket");
  });

  describe("a binding without a lazy index of cdktf get's", () => {
    let dir: string;
    before(async () => {
      dir = await mkdtemp(join(tmpdir(), "cts-lazy-"));
      // One package without lib/lazy-index.js, one whose lazy-index.js someone else wrote.
      for (const [name, lazyIndex] of [["plain-binding", undefined], ["hand-written", "exports.thing = 1;\n"]] as const) {
        const lib = join(dir, "node_modules", name, "lib");
        await mkdir(join(lib, "thing"), { recursive: true });
        await writeFile(join(lib, "..", "package.json"), JSON.stringify({ name, main: "lib/index.js" }));
        await writeFile(join(lib, "index.js"), `globalThis.eagerLoads = (globalThis.eagerLoads ?? 0) + 1;\nexports.thing = require("./thing");\n`);
        await writeFile(join(lib, "thing", "index.js"), "exports.Thing = class Thing {};\n");
        if (lazyIndex) await writeFile(join(lib, "lazy-index.js"), lazyIndex);
      }
    });
    after(() => rm(dir, { recursive: true, force: true }));

    it("loads as it ships, through import and require", async () => {
      const r = await inFreshNode(
        `const plain = await import("plain-binding");
        const hand = await import("hand-written");
        const { createRequire } = await import("node:module");
        const required = createRequire(process.cwd() + "/")("plain-binding");
        console.log(JSON.stringify({ eager: globalThis.eagerLoads, plain: plain.thing.Thing.name, hand: hand.thing.Thing.name, same: required === plain.default }));`,
        { cwd: dir },
      );
      assert.deepEqual(r, { eager: 2, plain: "Thing", hand: "Thing", same: true });
    });
  });
});

describe("a task that root-imports @cdktf/provider-aws", () => {
  let aws: typeof import("@cdktf/provider-aws");
  before(async () => {
    registerLazyBindings();
    aws = await import("@cdktf/provider-aws");
  });

  /** A security group in the default VPC, per service. */
  class WebSecurityGroup extends Task<ServicesCondition> {
    constructor() {
      super({ name: "web-sg", condition: services({ names: ["web"] }) });
    }
    synthesize(scope: TaskScope, input: TaskInput<ServicesCondition>): void {
      new aws.provider.AwsProvider(scope, "aws", { region: "eu-west-1" });
      const vpc = new aws.dataAwsVpc.DataAwsVpc(scope, "vpc", { default: true });
      const sg = new aws.securityGroup.SecurityGroup(scope, "web", { name: "web", vpcId: vpc.id });
      for (const s of input.services)
        new aws.vpcSecurityGroupIngressRule.VpcSecurityGroupIngressRule(scope, s.id, { securityGroupId: sg.id, cidrIpv4: `${s.address}/32`, ipProtocol: "tcp", fromPort: s.port, toPort: s.port });
    }
  }

  it("synthesizes through Testing.synthTask with live references", () => {
    const json = Testing.synthTask(new WebSecurityGroup(), { services: [{ name: "web", id: "web-1", node: "n1", address: "10.0.0.7", port: 8080 }] });
    assert.equal(json.resource.aws_security_group.web.vpc_id, "${data.aws_vpc.vpc.id}");
    const { "//": _metadata, ...rule } = json.resource.aws_vpc_security_group_ingress_rule["web-1"];
    assert.deepEqual(rule, {
      cidr_ipv4: "10.0.0.7/32",
      from_port: 8080,
      ip_protocol: "tcp",
      security_group_id: "${aws_security_group.web.id}",
      to_port: 8080,
    });
    assert.equal(json.data.aws_vpc.vpc.default, true);
  });

  it("has loaded only the namespaces the task used", () => {
    const loaded = Object.keys(createRequire(import.meta.url).cache).filter((k) => k.includes("/provider-aws/lib/"));
    assert.ok(loaded.length <= 6, `loaded ${loaded.length} files of provider-aws: ${loaded.join(", ")}`);
  });
});
