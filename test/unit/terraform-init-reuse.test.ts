import { afterEach, beforeEach, describe, it } from "node:test";
import assert from "node:assert/strict";
import { lstat, mkdir, mkdtemp, readFile, readlink, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { captureInit, createInitReuse, isFreshDir, restoreInit, reuseKey } from "../../src/terraform/init-reuse.ts";
import { counter } from "../support/waits.ts";

const PKG = ["registry.opentofu.org", "hashicorp", "local", "2.9.0", "linux_amd64"];
const LOCK = 'provider "registry.opentofu.org/hashicorp/local" {\n  version = "2.9.0"\n  hashes = ["h1:x"]\n}\n';

describe("sharing one init between fresh task folders", () => {
  let root: string;
  let cache: string;

  /** A task folder as `init` leaves it with a plugin cache: lock file, backend settings, one package link. */
  async function initialized(name: string): Promise<string> {
    const dir = join(root, name);
    await mkdir(join(dir, ".terraform", "providers", ...PKG.slice(0, -1)), { recursive: true });
    await symlink(join(cache, ...PKG), join(dir, ".terraform", "providers", ...PKG));
    await writeFile(join(dir, ".terraform", "terraform.tfstate"), '{"backend":{"type":"consul"}}');
    await writeFile(join(dir, ".terraform", "environment"), "other");
    await writeFile(join(dir, ".terraform.lock.hcl"), LOCK);
    return dir;
  }

  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), "cts-init-reuse-"));
    cache = join(root, "cache");
    await mkdir(join(cache, ...PKG), { recursive: true });
  });
  afterEach(() => rm(root, { recursive: true, force: true }));

  it("copies the lock file, the backend settings and the package links, not the selected workspace", async () => {
    const snap = await captureInit(await initialized("a"), cache);
    assert.ok(snap);
    const b = join(root, "b");
    await mkdir(b);
    assert.equal(await restoreInit(b, snap), true);
    assert.equal(await readFile(join(b, ".terraform.lock.hcl"), "utf8"), LOCK);
    assert.equal(await readFile(join(b, ".terraform", "terraform.tfstate"), "utf8"), '{"backend":{"type":"consul"}}');
    assert.equal(await readlink(join(b, ".terraform", "providers", ...PKG)), join(cache, ...PKG));
    await assert.rejects(lstat(join(b, ".terraform", "environment")));
  });

  it("gives a copy of Terraform's backend settings a lineage of its own, as its own init would", async () => {
    const a = await initialized("a");
    const stamped = '{"version":3,"serial":1,"lineage":"4d4a495f-56a0-2545-0dd9-47a152fd9055","backend":{"type":"consul"}}';
    await writeFile(join(a, ".terraform", "terraform.tfstate"), stamped);
    const b = join(root, "b");
    await mkdir(b);
    assert.equal(await restoreInit(b, (await captureInit(a, cache))!), true);
    const copy = await readFile(join(b, ".terraform", "terraform.tfstate"), "utf8");
    assert.match(copy, /"lineage":"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"/);
    assert.notEqual(copy, stamped);
    assert.equal(copy.replace(/"lineage":"[^"]+"/, ""), stamped.replace(/"lineage":"[^"]+"/, ""));
  });

  it("does not share an init that installed modules", async () => {
    const a = await initialized("a");
    await mkdir(join(a, ".terraform", "modules"));
    await writeFile(join(a, ".terraform", "modules", "modules.json"), "{}");
    assert.equal(await captureInit(a, cache), undefined);
  });

  it("does not share an init that copied a provider package instead of linking it", async () => {
    const a = await initialized("a");
    await rm(join(a, ".terraform", "providers", ...PKG));
    await mkdir(join(a, ".terraform", "providers", ...PKG));
    assert.equal(await captureInit(a, cache), undefined);
  });

  it("does not share links into the task folder itself or outside the plugin cache", async () => {
    const a = await initialized("a");
    const link = join(a, ".terraform", "providers", ...PKG);
    await rm(link);
    await mkdir(join(a, "pkg"));
    await symlink(join(a, "pkg"), link);
    assert.equal(await captureInit(a), undefined);
    await rm(link);
    await mkdir(join(root, "elsewhere"));
    await symlink(join(root, "elsewhere"), link);
    assert.equal(await captureInit(a, cache), undefined);
  });

  it("restores nothing when a package the snapshot links to is gone", async () => {
    const snap = await captureInit(await initialized("a"), cache);
    await rm(join(cache, ...PKG), { recursive: true });
    const b = join(root, "b");
    await mkdir(b);
    assert.equal(await restoreInit(b, snap!), false);
    assert.equal(await isFreshDir(b), true);
  });

  it("runs init once for several fresh folders with the same key, and their own init for folders initialized before", async () => {
    const reuse = createInitReuse({ pluginCacheDir: cache });
    let inits = 0;
    // The first init ends only once the two other folders wait for it: they must share it.
    const othersWaiting = counter();
    const runInitIn = (name: string) => async () => {
      inits++;
      await othersWaiting.reached(2);
      await initialized(name);
    };
    const waitForOther = <T>(p: Promise<T>) => {
      othersWaiting.add();
      return p;
    };
    for (const n of ["a", "b", "c"]) await mkdir(join(root, n));
    const how = await Promise.all(["a", "b", "c"].map((n) => reuse.init(join(root, n), "k", runInitIn(n), waitForOther)));
    assert.deepEqual(how.sort(), ["ran", "reused", "reused"]);
    assert.equal(inits, 1);
    for (const n of ["b", "c"]) assert.equal(await readFile(join(root, n, ".terraform.lock.hcl"), "utf8"), LOCK);
    // "b" now has a lock file: a later init of it is its own (it may pin older versions).
    assert.equal(await reuse.init(join(root, "b"), "k", async () => void inits++, (p) => p), "ran");
    assert.equal(inits, 2);
  });

  it("keys on the environment and on blocks the init hash does not read", () => {
    const env = { CONSUL_HTTP_ADDR: "127.0.0.1:8500" };
    const base = reuseKey("h", '{"resource":{}}', {}, env);
    assert.equal(reuseKey("h", '{"resource":{"x":1}}', {}, env), base);
    assert.notEqual(reuseKey("h", '{"resource":{}}', {}, { ...env, TF_CLI_CONFIG_FILE: "/x" }), base);
    assert.notEqual(reuseKey("h", '{"resource":{},"check":{"c":{}}}', {}, env), base);
    assert.notEqual(reuseKey("h", '{"resource":{}}', { "extra.tf.json": '{"ephemeral":{}}' }, env), base);
  });
});
