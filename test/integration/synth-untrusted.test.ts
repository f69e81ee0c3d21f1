import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { readFile, readdir } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { startConsul, type ConsulAgent } from "../support/consul.ts";
import { startRuntime, tempDir, writeConfig } from "../support/cts.ts";

const run = promisify(execFile);
const CTS = fileURLToPath(new URL("../../bin/cts.js", import.meta.url));
const MODULE = fileURLToPath(new URL("../../modules/cts-echo", import.meta.url));

/** Catalog values an attacker could register; each must land in infrastructure byte for byte. */
const NASTY: Record<string, string> = {
  interp: '${file("/etc/hostname")}',
  directive: "%{ if true }x%{ endif }",
  token: "${TfToken[TOKEN.1]}",
  list: "#{TfToken[TOKEN.2]}",
  mixed: 'say "hi"\n\ttab \\ back $${x} $ { } ü 名前 🚀',
};

describe("catalog data stays literal from Consul to infrastructure", () => {
  let consul: ConsulAgent;
  let tmp: { dir: string; cleanup(): Promise<void> };
  let config: string;
  const outDir = () => join(tmp.dir, "out");

  before(async () => {
    consul = await startConsul();
    tmp = await tempDir();
    for (const [id, v] of Object.entries(NASTY)) await consul.register({ Name: "web", ID: id, Port: 80, Meta: { v } });
    config = await writeConfig(tmp.dir, { consulAddress: consul.address, tasks: [`new MetaFiles("meta", ${JSON.stringify(outDir())})`] });
  });
  after(async () => {
    await consul?.stop();
    await tmp?.cleanup();
  });

  it("`cts synth` writes JSON whose apply reproduces every metadata value exactly", async () => {
    const { stdout } = await run("node", [CTS, "synth", "--config", config, "--json"]);
    const summary = JSON.parse(stdout);
    assert.equal(summary.tasks[0].ok, true);
    assert.equal(summary.tasks[0].resources, Object.keys(NASTY).length);
    assert.equal(summary.tasks[0].file, join(tmp.dir, "cts.out", "meta", "main.tf.json"), "a review folder beside the config, not the task's working dir");
    const json = await readFile(summary.tasks[0].file, "utf8");
    assert.doesNotMatch(json, /[^$]\$\{file/, "no live interpolation in the JSON");

    const rt = await startRuntime(config, { mode: "once" });
    try {
      const [outcome] = await rt.controller.once();
      assert.equal(outcome!.ok, true, outcome!.error?.message);
    } finally {
      await rt.close();
    }
    const files = await readdir(outDir());
    assert.equal(files.length, Object.keys(NASTY).length);
    for (const [id, v] of Object.entries(NASTY)) assert.equal(await readFile(join(outDir(), `${id}.txt`), "utf8"), v, id);
  });

  it("`cts synth --stdout` prints the same JSON and reports whether it changed since the last apply", async () => {
    const { stdout } = await run("node", [CTS, "synth", "meta", "--config", config, "--stdout"]);
    assert.equal(stdout, await readFile(join(tmp.dir, "cts.out", "meta", "main.tf.json"), "utf8"));
    const { stdout: table } = await run("node", [CTS, "synth", "--config", config, "--out", join(tmp.dir, "review")]);
    assert.match(table, /meta\s+5\s+\d+\s+[0-9a-f]{12}\s+no\s/);
  });
});

describe("ModuleTask runs an unchanged CTS module", () => {
  it("passes the services variable in CTS's protocol-v0 shape and keys", async () => {
    const consul = await startConsul();
    const tmp = await tempDir();
    try {
      await consul.register({ Name: "api", ID: "api-1", Address: "10.1.0.1", Port: 9000, Tags: ["b", "a"], Meta: { team: "${x}" } });
      const out = join(tmp.dir, "services.json");
      const file = await writeConfig(tmp.dir, {
        consulAddress: consul.address,
        tasks: [
          `new ModuleTask({ name: "echo", condition: services({ names: ["api"], userMeta: { owner: "net" } }), module: ${JSON.stringify(MODULE)}, variables: { output_path: ${JSON.stringify(out)} } })`,
        ],
      });
      const rt = await startRuntime(file, { mode: "once" });
      try {
        const [outcome] = await rt.controller.once();
        assert.equal(outcome!.ok, true, outcome!.error?.message);
      } finally {
        await rt.close();
      }
      const services = JSON.parse(await readFile(out, "utf8"));
      const keys = Object.keys(services);
      assert.equal(keys.length, 1);
      assert.match(keys[0]!, /^api-1\.cts-test\.dc1$/);
      const s = services[keys[0]!];
      assert.deepEqual(s.tags, ["a", "b"]);
      assert.deepEqual(s.meta, { team: "${x}" });
      assert.deepEqual(s.cts_user_defined_meta, { owner: "net" });
      assert.equal(s.address, "10.1.0.1");
      assert.equal(s.port, 9000);
      assert.equal(s.status, "passing");
      assert.equal(s.node, "cts-test");
      assert.equal(s.node_datacenter, "dc1");
      assert.ok(s.node_id && s.node_address);
    } finally {
      await consul.stop();
      await tmp.cleanup();
    }
  });
});

describe("service names and tags with newlines, quotes and openers, as catalog-services map keys", () => {
  const NAMES = ["evil\nname", 'q"uote\\', "${file(\"/etc/hostname\")}", "%{ if true }", "plain"];
  const TAGS = ["line\nbreak", 'x"y', "<&>", "${x}"];
  const RECORD = fileURLToPath(new URL("../fixtures/cts-modules/record", import.meta.url));

  it("reach a task class and a CTS module exactly (JSON.stringify in task code, jsonencode keys in Terraform, module variables)", async () => {
    const consul = await startConsul();
    const tmp = await tempDir();
    try {
      for (const [i, name] of NAMES.entries()) await consul.register({ Name: name, ID: `svc-${i}`, Port: 80, Tags: TAGS });
      const out = join(tmp.dir, "cat");
      const received = join(tmp.dir, "received.json");
      const file = await writeConfig(tmp.dir, {
        consulAddress: consul.address,
        tasks: [
          `new CatalogJson("catalog", ${JSON.stringify(out)})`,
          `new ModuleTask({ name: "module", condition: catalogServices({ regexp: "" }), module: ${JSON.stringify(RECORD)}, variables: { prefix: "p", out: ${JSON.stringify(received)} } })`,
        ],
      });
      const rt = await startRuntime(file, { mode: "once" });
      try {
        const outcomes = await rt.controller.once();
        for (const o of outcomes) assert.equal(o.ok, true, o.error?.message);
      } finally {
        await rt.close();
      }
      const fromTask = JSON.parse(await readFile(join(out, "task.json"), "utf8")) as Record<string, string[]>;
      const fromTerraform = JSON.parse(await readFile(join(out, "terraform.json"), "utf8")) as Record<string, string[]>;
      const fromModule = (JSON.parse(await readFile(received, "utf8")) as { catalog_services: Record<string, string[]> }).catalog_services;
      const want = [...TAGS].sort();
      for (const name of NAMES) {
        assert.deepEqual(fromTask[name], want, `task code saw ${JSON.stringify(name)}`);
        assert.deepEqual(fromTerraform[name], want, `jsonencode wrote ${JSON.stringify(name)}`);
        assert.deepEqual(fromModule[name], want, `the module received ${JSON.stringify(name)}`);
      }
    } finally {
      await consul.stop();
      await tmp.cleanup();
    }
  });
});
