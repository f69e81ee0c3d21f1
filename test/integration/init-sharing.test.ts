import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtemp, readdir, readFile, readlink, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createTerraformDriver } from "../../src/terraform/driver.ts";
import type { LocalTerraformDriver, TaskWorkspace } from "../../src/terraform/types.ts";
import { startConsul, type ConsulAgent } from "../support/consul.ts";
import { tools } from "../support/tools.ts";

const SHARED = "initialized from another task's identical init";
// What `init` prints while installing providers (tofu and terraform alike).
const INIT_RAN = /Initializing provider plugins/;

/** main.tf.json writing one file with hashicorp/local; the file's name and text are no init input. */
function task(name: string, backendPath: string, out: string, content = `hello from ${name}`): TaskWorkspace {
  return {
    task: name,
    json: JSON.stringify({
      terraform: { backend: { consul: { path: backendPath, gzip: true } }, required_providers: { local: { source: "hashicorp/local", version: ">= 2.0" } } },
      resource: { local_file: { out: { filename: join(out, `${name}.txt`), content } } },
    }),
  };
}

/** Everything `init` leaves in a folder, as text: lock file, backend settings, provider links. */
async function initResult(dir: string): Promise<Record<string, string>> {
  const found: Record<string, string> = {
    lock: await readFile(join(dir, ".terraform.lock.hcl"), "utf8"),
    backend: await readFile(join(dir, ".terraform", "terraform.tfstate"), "utf8"),
  };
  const walk = async (rel: string, depth: number): Promise<void> => {
    for (const name of await readdir(join(dir, ".terraform", "providers", rel))) {
      const path = join(rel, name);
      if (depth === 4) found[path] = await readlink(join(dir, ".terraform", "providers", path));
      else await walk(path, depth + 1);
    }
  };
  await walk("", 0);
  return found;
}

const LINEAGE = /"lineage":\s*"([^"]+)"/;
const lineage = (text: string) => LINEAGE.exec(text)?.[1];
const withoutLineage = (r: Record<string, string>) => ({ ...r, backend: r.backend!.replace(LINEAGE, '"lineage": "…"') });

for (const tool of ["tofu", "terraform"] as const) {
  describe(`fresh task folders with the same providers share one init (${tool})`, () => {
    let consul: ConsulAgent;
    let root: string;
    let shared: LocalTerraformDriver;
    let reference: LocalTerraformDriver;
    const logs: string[] = [];
    const linesOf = (t: string) => logs.filter((l) => l.startsWith(`${t}: `));

    before(async () => {
      consul = await startConsul();
      root = await mkdtemp(join(tmpdir(), `cts-init-share-${tool}-`));
      const t = tools();
      const common = { binary: t[tool], cliConfigFile: t.cliConfig, env: { CONSUL_HTTP_ADDR: consul.address }, killGraceMs: 3_000 };
      shared = createTerraformDriver({ ...common, workingDir: join(root, "shared"), log: (name, line) => logs.push(`${name}: ${line}`) });
      reference = createTerraformDriver({ ...common, workingDir: join(root, "reference"), shareInit: false });
    });
    after(async () => {
      await shared?.close();
      await reference?.close();
      await consul?.stop();
      if (root) await rm(root, { recursive: true, force: true });
    });

    it("a second task runs no init of its own, applies, and holds exactly what a normal init writes", async () => {
      const first = await shared.apply(task("a", "share/one", root));
      assert.equal(first.initialized, true);
      assert.ok(linesOf("a").some((l) => INIT_RAN.test(l)), linesOf("a").join("\n"));

      const second = await shared.apply(task("b", "share/one", root));
      assert.equal(second.initialized, true);
      assert.deepEqual(second.summary, { add: 1, change: 0, destroy: 0 });
      assert.equal(await readFile(join(root, "b.txt"), "utf8"), "hello from b");
      assert.ok(linesOf("b").some((l) => l.includes(SHARED)), linesOf("b").join("\n"));
      assert.ok(!linesOf("b").some((l) => INIT_RAN.test(l)), linesOf("b").join("\n"));

      // A task in a driver that never shares: its own `init` in a fresh folder, the same config.
      await reference.apply(task("ref", "share/one", root));
      const [a, b, ref] = await Promise.all(["a", "b"].map((t) => initResult(shared.taskDir(t))).concat(initResult(reference.taskDir("ref"))));
      // Terraform (not tofu) stamps the backend settings with a random lineage per init; so does the copy.
      if (tool === "terraform") assert.notEqual(lineage(b!.backend!), lineage(a!.backend!));
      assert.deepEqual(withoutLineage(b!), withoutLineage(ref!));

      // Later runs of the task behave as after its own init: no init, no changes, a clean plan.
      const again = await shared.apply(task("b", "share/one", root));
      assert.equal(again.initialized, false);
      assert.equal(again.changesPresent, false);
      const plan = await shared.plan(task("b", "share/one", root));
      assert.equal(plan.changesPresent, false, plan.output);
    });

    it("repairs a copied folder whose providers vanished with a real init, and stops sharing that init", async () => {
      await shared.apply(task("r1", "share/repair", root));
      await shared.apply(task("r2", "share/repair", root));
      assert.ok(linesOf("r2").some((l) => l.includes(SHARED)), linesOf("r2").join("\n"));
      await rm(join(shared.taskDir("r2"), ".terraform", "providers"), { recursive: true });
      logs.length = 0;
      const repaired = await shared.apply(task("r2", "share/repair", root, "changed"));
      assert.equal(repaired.initialized, true);
      assert.ok(linesOf("r2").some((l) => INIT_RAN.test(l)), linesOf("r2").join("\n"));
      // The next fresh task with these inputs runs its own init instead of copying a suspect one.
      await shared.apply(task("r3", "share/repair", root));
      assert.ok(linesOf("r3").some((l) => INIT_RAN.test(l)), linesOf("r3").join("\n"));
    });

    it("fresh tasks started together run one init between them, and all apply", async () => {
      const names = ["p1", "p2", "p3", "p4"];
      const results = await Promise.all(names.map((n) => shared.apply(task(n, "share/parallel", root))));
      assert.ok(results.every((r) => r.initialized && r.summary.add === 1));
      const ran = names.filter((n) => linesOf(n).some((l) => INIT_RAN.test(l)));
      assert.equal(ran.length, 1, logs.join("\n"));
      assert.equal(names.filter((n) => linesOf(n).some((l) => l.includes(SHARED))).length, 3, logs.join("\n"));
      const lockFiles = await Promise.all(names.map((n) => readFile(join(shared.taskDir(n), ".terraform.lock.hcl"), "utf8")));
      assert.equal(new Set(lockFiles).size, 1);
      for (const n of names) assert.equal(await readFile(join(root, `${n}.txt`), "utf8"), `hello from ${n}`);
    });
  });
}
