import { describe, it, afterEach } from "node:test";
import assert from "node:assert/strict";
import { CtsError } from "../../src/errors/cts-error.ts";
import { refusedServiceName } from "../../src/consul/api-error.ts";
import type { ConsulApi, HealthEntry, KvEntry, QueryOptions, QueryResult, RawConfigEntry, RawIntention, RawNode } from "../../src/consul/client.ts";
import type { ServiceInstance } from "../../src/consul/types.ts";
import { createWatcher, type ConsulWatcher } from "../../src/watch/watcher.ts";
import { fakeClock, type FakeClock } from "../support/fake-clock.ts";

/**
 * An in-memory Consul with one global index: blocking calls wait until the index passes theirs,
 * the wait runs out (on the test's fake clock, shared with the watcher), or the signal aborts.
 */
class FakeConsul implements ConsulApi {
  index = 10n;
  readonly services = new Map<string, { entries: HealthEntry[]; tags: string[] }>();
  readonly kvs = new Map<string, string>();
  readonly calls: { what: string; index: bigint }[] = [];
  inFlight = 0;
  failWith: ((what: string, index: bigint) => unknown) | undefined;
  /** What each blocking read waits on, so a deaf one can be left out of wake-ups. */
  private readonly waiters = new Map<() => void, string>();
  /** Blocking reads (index > 0) of these are never woken and answer this index and data when their wait ends: a stuck streaming view. */
  private readonly deaf = new Map<string, { index: bigint; data: unknown }>();

  constructor(readonly clock: FakeClock = fakeClock()) {}

  register(name: string, id: string, opts: { node?: string; status?: string; tags?: string[] } = {}): void {
    const svc = this.services.get(name) ?? { entries: [], tags: opts.tags ?? [] };
    if (opts.tags) svc.tags = opts.tags;
    svc.entries = svc.entries.filter((e) => e.Service.ID !== id);
    svc.entries.push({
      Node: { Node: opts.node ?? "n1", Address: "10.0.0.1" },
      Service: { ID: id, Service: name, Port: 80, Tags: svc.tags },
      Checks: [{ CheckID: `check-${id}`, Status: opts.status ?? "passing" }],
    });
    this.services.set(name, svc);
    this.bump();
  }
  deregister(name: string, id: string): void {
    const svc = this.services.get(name);
    if (!svc) return;
    svc.entries = svc.entries.filter((e) => e.Service.ID !== id);
    if (svc.entries.length === 0) this.services.delete(name);
    this.bump();
  }
  setTags(name: string, tags: string[]): void {
    const svc = this.services.get(name)!;
    svc.tags = tags;
    for (const e of svc.entries) e.Service.Tags = tags;
    this.bump();
  }
  put(key: string, value: string): void {
    this.kvs.set(key, value);
    this.bump();
  }
  bump(): void {
    this.index++;
    for (const [w, what] of [...this.waiters]) if (!this.deaf.has(what)) w();
  }
  /** From now on blocking reads of service `name` hear no change: they answer what they hold now, at today's index, when their wait ends. */
  deafen(name: string): void {
    this.deaf.set(`health:${name}`, { index: this.index, data: structuredClone(this.services.get(name)?.entries ?? []) });
  }
  count(what: string): number {
    return this.calls.filter((c) => c.what === what).length;
  }

  private async answer<T>(what: string, opts: QueryOptions, data: () => T): Promise<QueryResult<T>> {
    this.calls.push({ what, index: opts.index ?? 0n });
    this.inFlight++;
    try {
      const err = this.failWith?.(what, opts.index ?? 0n);
      if (err) throw err;
      if (opts.index && opts.index >= this.index) {
        await new Promise<void>((resolve, reject) => {
          const done = () => {
            this.clock.clearTimeout(timer);
            this.waiters.delete(done);
            opts.signal?.removeEventListener("abort", abort);
            resolve();
          };
          const abort = () => {
            done();
            reject(Object.assign(new Error("aborted"), { name: "AbortError" }));
          };
          const timer = this.clock.setTimeout(done, opts.wait ?? 1_000);
          this.waiters.set(done, what);
          opts.signal?.addEventListener("abort", abort, { once: true });
        });
      }
      const frozen = opts.index ? this.deaf.get(what) : undefined;
      if (frozen) return { data: structuredClone(frozen.data) as T, index: frozen.index };
      return { data: data(), index: this.index };
    } finally {
      this.inFlight--;
    }
  }

  healthService(req: { service: string; passing?: boolean }, opts: QueryOptions = {}) {
    return this.answer(`health:${req.service}`, opts, () =>
      structuredClone(this.services.get(req.service)?.entries ?? []).filter((e) => !req.passing || e.Checks!.every((c) => c.Status === "passing")),
    );
  }
  catalogServices(_req: unknown, opts: QueryOptions = {}) {
    return this.answer("catalog", opts, () => Object.fromEntries([...this.services].map(([n, s]) => [n, [...s.tags]])));
  }
  kv(req: { path: string; recurse?: boolean }, opts: QueryOptions = {}) {
    return this.answer(`kv:${req.path}`, opts, (): KvEntry[] =>
      [...this.kvs].filter(([k]) => (req.recurse ? k.startsWith(req.path) : k === req.path)).map(([Key, Value]) => ({ Key, Value })),
    );
  }
  /** Nodes, intentions and config entries: one list each, changed by the tests through `lists`. */
  readonly lists = new Map<string, unknown[]>();
  catalogNodes(_req: unknown, opts: QueryOptions = {}) {
    return this.answer("nodes", opts, () => structuredClone(this.lists.get("nodes") ?? []) as RawNode[]);
  }
  intentions(_req: unknown, opts: QueryOptions = {}) {
    return this.answer("intentions", opts, () => structuredClone(this.lists.get("intentions") ?? []) as RawIntention[]);
  }
  configEntries(_req: unknown, opts: QueryOptions = {}) {
    return this.answer("config", opts, () => structuredClone(this.lists.get("config") ?? []) as RawConfigEntry[]);
  }
  close(): void {}
}

const timing = { waitMs: 1_000, minIntervalMs: 1, jitterMs: 0, backoffBaseMs: 10, backoffMaxMs: 20, fatalRetryMs: 20 };

/** A watcher on `consul` whose views pause on the same fake clock as the fake's blocking waits. */
const watch = (consul: FakeConsul, opts: Parameters<typeof createWatcher>[1] = {}) => createWatcher(consul, { timing, clock: consul.clock, ...opts });

/** Index-0 (full) reads of service web so far. */
const fullReads = (consul: FakeConsul) => consul.calls.filter((c) => c.what === "health:web" && c.index === 0n).length;

function counter() {
  const l = { changes: 0, errors: [] as { error: CtsError; fatal: boolean }[], onChange: () => l.changes++, onError: (error: CtsError, fatal: boolean) => l.errors.push({ error, fatal }) };
  return l;
}

const ids = (list: ServiceInstance[] | undefined) => (list ?? []).map((i) => `${i.name}/${i.id}`);

describe("createWatcher", () => {
  let watcher: ConsulWatcher | undefined;

  /** A watch of service web (one instance, w1) whose warnings are kept. */
  async function watchWebWithWarnings() {
    const consul = new FakeConsul();
    consul.register("web", "w1");
    const warnings: string[] = [];
    watcher = watch(consul, { warn: (m) => warnings.push(m) });
    const l = counter();
    const sub = watcher.subscribe({ kind: "services", query: { names: ["web"] } }, l);
    await sub.ready;
    return { consul, warnings, l, sub };
  }
  afterEach(() => watcher?.close());

  it("shares one view between two subscribers on service web, and closes it when the last leaves", async () => {
    const consul = new FakeConsul();
    consul.register("web", "web-1");
    watcher = watch(consul);
    const a = counter();
    const b = counter();
    const subA = watcher.subscribe({ kind: "services", query: { names: ["web"] } }, a);
    const subB = watcher.subscribe({ kind: "services", query: { names: ["web"] } }, b);
    await Promise.all([subA.ready, subB.ready]);
    assert.equal(watcher.viewCount(), 1);
    assert.deepEqual(ids(subA.current()), ["web/web-1"]);
    assert.deepEqual(ids(subB.current()), ["web/web-1"]);
    assert.equal(a.changes, 0, "the first data resolves ready; it is not a change");

    consul.register("web", "web-2");
    await consul.clock.runUntil(() => a.changes === 1 && b.changes === 1);
    assert.deepEqual(ids(subB.current()), ["web/web-1", "web/web-2"]);
    // The view sends its next blocking query after delivering the change; on a busy machine that
    // can come a little later, so wait for it, then check that it is the only one.
    await consul.clock.runUntil(() => consul.inFlight >= 1);
    assert.equal(consul.inFlight, 1, "one blocking query for both subscribers");

    subA.close();
    assert.equal(watcher.viewCount(), 1);
    subB.close();
    assert.equal(watcher.viewCount(), 0);
    await consul.clock.runUntil(() => consul.inFlight === 0);
  });

  it("does not notify when another service's change leaves this one's data identical", async () => {
    const consul = new FakeConsul();
    consul.register("web", "web-1");
    watcher = watch(consul);
    const l = counter();
    const sub = watcher.subscribe({ kind: "services", query: { names: ["web"] } }, l);
    await sub.ready;
    const before = consul.count("health:web");
    consul.register("api", "api-1");
    await consul.clock.runUntil(() => consul.count("health:web") > before + 1);
    assert.equal(l.changes, 0);
  });

  it("combines one view per name into one sorted list, with the subscriber's own user metadata", async () => {
    const consul = new FakeConsul();
    consul.register("web", "w", { node: "n2" });
    consul.register("api", "a", { node: "n1" });
    watcher = watch(consul);
    const one = watcher.subscribe({ kind: "services", query: { names: ["web", "api"], userMeta: { team: "x" } } }, counter());
    const two = watcher.subscribe({ kind: "services", query: { names: ["api"], userMeta: { team: "y" } } }, counter());
    await Promise.all([one.ready, two.ready]);
    assert.equal(watcher.viewCount(), 2, "api's view is shared despite different user metadata");
    assert.deepEqual(ids(one.current()), ["api/a", "web/w"]);
    assert.deepEqual(one.current()!.map((i) => i.ctsUserDefinedMeta), [{ team: "x" }, { team: "x" }]);
    assert.deepEqual(two.current()!.map((i) => i.ctsUserDefinedMeta), [{ team: "y" }]);
  });

  it("with per-service settings (CTS's service blocks), holds one view per entry and gives each entry's instances its own user metadata", async () => {
    const consul = new FakeConsul();
    consul.register("web", "w", { node: "n2" });
    consul.register("api", "a", { node: "n1" });
    watcher = watch(consul);
    const l = counter();
    const sub = watcher.subscribe(
      { kind: "services", query: { names: ["web", "api"], each: [{ name: "web", userMeta: { team: "web" } }, { name: "api", filter: "Service.Port == 80", userMeta: { team: "api" } }] } },
      l,
    );
    await sub.ready;
    assert.equal(watcher.viewCount(), 2);
    assert.deepEqual(ids(sub.current()), ["api/a", "web/w"]);
    assert.deepEqual(sub.current()!.map((i) => i.ctsUserDefinedMeta), [{ team: "api" }, { team: "web" }]);
    consul.register("web", "w2", { node: "n3" });
    await consul.clock.runUntil(() => l.changes === 1);
    assert.deepEqual(sub.current()!.map((i) => `${i.id}:${i.ctsUserDefinedMeta.team}`), ["a:api", "w:web", "w2:web"]);
  });

  it("drops an instance whose check fails when passing-only (the default)", async () => {
    const consul = new FakeConsul();
    consul.register("web", "web-1");
    consul.register("web", "web-2");
    watcher = watch(consul);
    const l = counter();
    const sub = watcher.subscribe({ kind: "services", query: { names: ["web"] } }, l);
    const all = watcher.subscribe({ kind: "services", query: { names: ["web"], passingOnly: false } }, counter());
    await Promise.all([sub.ready, all.ready]);
    assert.equal(watcher.viewCount(), 2, "passing and non-passing are distinct queries");
    consul.register("web", "web-2", { status: "critical" });
    await consul.clock.runUntil(() => l.changes === 1);
    assert.deepEqual(ids(sub.current()), ["web/web-1"]);
    await consul.clock.runUntil(() => all.current()!.some((i) => i.status === "critical"));
  });

  it("does not ask Consul for passing instances when the filter reads Checks.Status", async () => {
    const consul = new FakeConsul();
    watcher = watch(consul);
    const sub = watcher.subscribe({ kind: "services", query: { names: ["web"], filter: 'Checks.Status != "critical"' } }, counter());
    await sub.ready;
    assert.match(watcher.viewKeys()[0]!, /"passing":false/);
  });

  it("with a regexp, picks up a new matching service at once and lets go of a removed one", async () => {
    const consul = new FakeConsul();
    consul.register("web-a", "a1");
    consul.register("db", "d1");
    watcher = watch(consul);
    const l = counter();
    const sub = watcher.subscribe({ kind: "services", query: { regexp: "^web-" } }, l);
    await sub.ready;
    assert.deepEqual(ids(sub.current()), ["web-a/a1"]);
    assert.equal(watcher.viewCount(), 2, "the catalog view and web-a's health view");

    const started = consul.clock.now();
    consul.register("web-b", "b1");
    await consul.clock.runUntil(() => ids(sub.current()).includes("web-b/b1"), "web-b to be picked up");
    // CTS sleeps 10 s before it looks at a new service; here only the views' 1 ms pauses pass.
    assert.ok(consul.clock.now() - started <= 2 * timing.minIntervalMs, `picked up after ${consul.clock.now() - started} ms of the fake clock`);
    assert.equal(l.changes, 1);
    assert.equal(watcher.viewCount(), 3);

    consul.deregister("web-a", "a1");
    await consul.clock.runUntil(() => watcher!.viewCount() === 2);
    await consul.clock.runUntil(() => ids(sub.current()).join() === "web-b/b1");
    sub.close();
    assert.equal(watcher.viewCount(), 0);
  });

  it("with a regexp, a matching service whose instances all fail is no change, and a closed subscription keeps its last data", async () => {
    const consul = new FakeConsul();
    consul.register("web-a", "a1");
    watcher = watch(consul);
    const l = counter();
    const sub = watcher.subscribe({ kind: "services", query: { regexp: "^web-" } }, l);
    await sub.ready;

    consul.register("web-b", "b1", { status: "critical" });
    await consul.clock.runUntil(() => watcher!.viewCount() === 3);
    const seen = consul.index;
    await consul.clock.runUntil(() => consul.calls.some((c) => c.what === "health:web-b" && c.index >= seen));
    assert.equal(l.changes, 0, "web-b contributes no passing instance: the list is the same");

    consul.register("web-b", "b1");
    await consul.clock.runUntil(() => l.changes === 1);
    assert.deepEqual(ids(sub.current()), ["web-a/a1", "web-b/b1"]);
    sub.close();
    assert.deepEqual(ids(sub.current()), ["web-a/a1", "web-b/b1"], "a run still in flight reads what the task last saw");
  });

  it("shares the catalog view between a regexp services source and a catalog-services source", async () => {
    const consul = new FakeConsul();
    consul.register("web", "w1");
    watcher = watch(consul);
    const s1 = watcher.subscribe({ kind: "services", query: { regexp: "web" } }, counter());
    const s2 = watcher.subscribe({ kind: "catalog-services", query: { regexp: "" } }, counter());
    await Promise.all([s1.ready, s2.ready]);
    assert.equal(watcher.viewCount(), 2);
  });

  it("tells catalog-services subscribers only when the set of matching names changes, not on tag changes", async () => {
    const consul = new FakeConsul();
    consul.register("web", "w1", { tags: ["v1"] });
    watcher = watch(consul);
    const l = counter();
    const sub = watcher.subscribe({ kind: "catalog-services", query: { regexp: "^(web|api)$" } }, l);
    await sub.ready;
    assert.deepEqual(sub.current(), { web: ["v1"] });

    consul.setTags("web", ["v2"]);
    consul.register("other", "o1");
    const seen = consul.index;
    await consul.clock.runUntil(() => consul.calls.some((c) => c.what === "catalog" && c.index >= seen));
    assert.equal(l.changes, 0);
    assert.deepEqual(sub.current(), { web: ["v2"] }, "current() still has the latest tags");

    consul.register("api", "a1");
    await consul.clock.runUntil(() => l.changes === 1);
    assert.deepEqual(Object.keys(sub.current()!), ["api", "web"]);
  });

  it("watches a KV key and a prefix", async () => {
    const consul = new FakeConsul();
    consul.put("app/a", "1");
    watcher = watch(consul);
    const l = counter();
    const one = watcher.subscribe({ kind: "consul-kv", query: { path: "app/a" } }, counter());
    const all = watcher.subscribe({ kind: "consul-kv", query: { path: "app/", recurse: true } }, l);
    await Promise.all([one.ready, all.ready]);
    assert.deepEqual(one.current(), { "app/a": "1" });
    consul.put("app/b", "2");
    await consul.clock.runUntil(() => l.changes === 1);
    assert.deepEqual(all.current(), { "app/a": "1", "app/b": "2" });
  });

  it("watches nodes, intentions and config entries: one shared view per distinct query, a change told, an identical answer not", async () => {
    const consul = new FakeConsul();
    consul.lists.set("nodes", [{ Node: "n1", Address: "10.0.0.1" }]);
    consul.lists.set("intentions", [{ SourceName: "web", DestinationName: "db", Action: "allow", Precedence: 9 }]);
    consul.lists.set("config", [{ Kind: "service-defaults", Name: "db", Protocol: "http" }]);
    watcher = watch(consul);
    const nodesA = counter();
    const intentionsL = counter();
    const configL = counter();
    const a = watcher.subscribe({ kind: "nodes", query: { filter: "Meta.role == edge" } }, nodesA);
    const b = watcher.subscribe({ kind: "nodes", query: { filter: "Meta.role == edge" } }, counter());
    const i = watcher.subscribe({ kind: "intentions", query: { destination: "db" } }, intentionsL);
    const c = watcher.subscribe({ kind: "config-entries", query: { kind: "service-defaults", name: "db" } }, configL);
    await Promise.all([a.ready, b.ready, i.ready, c.ready]);
    assert.equal(watcher.viewCount(), 3, "the two identical nodes queries share one view");
    assert.deepEqual(a.current(), [{ id: "", node: "n1", address: "10.0.0.1", datacenter: "", taggedAddresses: {}, meta: {} }]);
    assert.equal(i.current()![0]!.action, "allow");
    assert.deepEqual(c.current(), [{ Kind: "service-defaults", Name: "db", Protocol: "http" }]);

    consul.lists.set("intentions", [{ SourceName: "web", DestinationName: "db", Action: "deny", Precedence: 9 }]);
    consul.bump();
    await consul.clock.runUntil(() => intentionsL.changes === 1);
    assert.equal(i.current()![0]!.action, "deny");
    // Consul woke every query (one index for the whole fake), but only the intentions changed.
    await consul.clock.runUntil(() => consul.count("nodes") >= 3 && consul.count("config") >= 3);
    assert.equal(nodesA.changes, 0);
    assert.equal(configL.changes, 0);
  });

  it("rejects ready and reports a fatal error on a 403, then heals when the ACL is fixed", async () => {
    const consul = new FakeConsul();
    consul.register("web", "w1");
    consul.failWith = () => new CtsError("CONSUL_PERMISSION_DENIED", "external", "denied", { detail: { status: 403 } });
    watcher = watch(consul);
    const l = counter();
    const sub = watcher.subscribe({ kind: "services", query: { names: ["web"] } }, l);
    await assert.rejects(sub.ready, (e: unknown) => e instanceof CtsError && e.code === "CONSUL_PERMISSION_DENIED");
    assert.equal(l.errors[0]?.fatal, true);
    consul.failWith = undefined;
    await consul.clock.runUntil(() => sub.current() !== undefined);
    assert.equal(l.changes, 1, "onChange tells the subscriber the source healed");
  });

  it("checks a blocking answer that lost instances with one full read, and uses it when Consul says nothing was filtered", async () => {
    const consul = new FakeConsul();
    consul.register("web", "w1");
    consul.register("web", "w2");
    watcher = watch(consul);
    const l = counter();
    const sub = watcher.subscribe({ kind: "services", query: { names: ["web"] } }, l);
    await sub.ready;
    const fullReads = () => consul.calls.filter((c) => c.what === "health:web" && c.index === 0n).length;
    assert.equal(fullReads(), 1);
    consul.register("web", "w3");
    await consul.clock.runUntil(() => ids(sub.current()).length === 3);
    assert.equal(fullReads(), 1, "an answer that only gained instances is used as it is");
    consul.deregister("web", "w2");
    await consul.clock.runUntil(() => ids(sub.current()).length === 2);
    assert.deepEqual(ids(sub.current()), ["web/w1", "web/w3"]);
    assert.equal(fullReads(), 2, "one full read checked the loss");
    assert.deepEqual(l.errors, []);
  });

  it("refuses a blocking answer that lost instances when the full read says the ACLs filtered them (Consul's streaming answers never say so)", async () => {
    const consul = new FakeConsul();
    consul.register("web", "w1");
    consul.register("web", "w2");
    watcher = watch(consul, { timing: { ...timing, fatalRetryMs: 10_000 } });
    const l = counter();
    const sub = watcher.subscribe({ kind: "services", query: { names: ["web"] } }, l);
    await sub.ready;
    // The token lost node:read on w2's node: a blocking read just leaves it out, a full one says so.
    const filtered = new CtsError("CONSUL_PERMISSION_DENIED", "external", 'Consul filtered instances of service "web" by ACLs', { detail: { status: 403, filteredByAcls: true } });
    consul.failWith = (what, index) => (what === "health:web" && index === 0n ? filtered : undefined);
    consul.deregister("web", "w2");
    await consul.clock.runUntil(() => l.errors.length > 0);
    assert.equal(l.errors[0]!.error.code, "CONSUL_PERMISSION_DENIED");
    assert.equal(l.errors[0]!.fatal, true);
    assert.deepEqual(ids(sub.current()), ["web/w1", "web/w2"], "the pool keeps its instances");
    assert.equal(l.changes, 0);
  });

  it("a blocking health read that is never woken for a change (a stuck streaming view) catches up by one full read when its wait runs out, and warns", async () => {
    const { consul, warnings, l, sub } = await watchWebWithWarnings();
    consul.deafen("web");
    consul.register("web", "w2");
    await consul.clock.runUntil(() => ids(sub.current()).length === 2);
    assert.deepEqual(ids(sub.current()), ["web/w1", "web/w2"]);
    assert.equal(l.changes, 1);
    assert.equal(warnings.length, 1);
    assert.match(warnings[0]!, /blocking read of service "web" was not woken by a change/);
    // The view stays stuck: later waits end with the same stale answer, and the full reads find nothing new.
    const before = fullReads(consul);
    await consul.clock.runUntil(() => fullReads(consul) >= before + 2);
    assert.equal(l.changes, 1, "no flap back to the stale answer");
    assert.equal(warnings.length, 1);
  });

  it("a wait that runs out with nothing changed costs one full read, and no notification or warning", async () => {
    const { consul, warnings, l, sub } = await watchWebWithWarnings();
    const blocking = () => consul.calls.filter((c) => c.what === "health:web" && c.index > 0n).length;
    assert.equal(fullReads(consul), 1);
    await consul.clock.runUntil(() => blocking() >= 3);
    assert.equal(fullReads(consul), 1 + (blocking() - 1), "one full read after each wait that ran out");
    assert.equal(l.changes, 0);
    assert.deepEqual(warnings, []);
  });

  it("a late subscriber to a view that is failing fatally is told too", async () => {
    const consul = new FakeConsul();
    consul.failWith = () => new CtsError("CONSUL_BAD_REQUEST", "usage", "bad filter", { detail: { status: 400 } });
    watcher = watch(consul, { timing: { ...timing, fatalRetryMs: 10_000 } });
    const first = watcher.subscribe({ kind: "services", query: { names: ["web"] } }, counter());
    await assert.rejects(first.ready);
    const second = watcher.subscribe({ kind: "services", query: { names: ["web"] } }, counter());
    await assert.rejects(second.ready, /bad filter/);
  });

  it("leaves a service Consul cannot serve out of the data, tells each subscriber once, and never asks for it again", async () => {
    const ODD = ["odd\nline", "odd\ttab"];
    const consul = new FakeConsul();
    consul.register("web", "w1");
    for (const [i, name] of ODD.entries()) consul.register(name, `odd-${i}`);
    const empty400 = new CtsError("CONSUL_BAD_REQUEST", "usage", "HTTP 400", { detail: { status: 400 } });
    consul.failWith = (what) => (what.startsWith("health:odd") ? refusedServiceName(empty400, what.slice("health:".length)) : undefined);
    watcher = watch(consul);
    const listen = () => Object.assign(counter(), { skipped: [] as string[], onSkipped(service: string) { this.skipped.push(service); } });
    const l = listen();
    const sub = watcher.subscribe({ kind: "services", query: { regexp: "" } }, l);
    await sub.ready;
    assert.deepEqual(ids(sub.current()), ["web/w1"]);
    assert.deepEqual(l.skipped.sort(), [...ODD].sort());
    assert.deepEqual(l.errors, [], "a skipped service is no error of the task");

    // Another task naming an odd service holds the same (refused) view and is told as well.
    const late = listen();
    const named = watcher.subscribe({ kind: "services", query: { names: ["web", ODD[0]!] } }, late);
    await named.ready;
    assert.deepEqual(ids(named.current()), ["web/w1"]);
    assert.deepEqual(late.skipped, [ODD[0]]);

    consul.register("web", "w2");
    await consul.clock.runUntil(() => l.changes === 1 && late.changes === 1);
    assert.deepEqual(ids(sub.current()), ["web/w1", "web/w2"]);
    for (const name of ODD) assert.equal(consul.count(`health:${name}`), 1, `${JSON.stringify(name)} was asked once, not polled`);
    assert.equal(l.skipped.length, 2, "a later catalog answer tells nothing again");
  });

  it("refuses invalid sources with usage errors", () => {
    watcher = watch(new FakeConsul());
    assert.throws(() => watcher!.subscribe({ kind: "services", query: { names: [] } }, counter()), /names is empty/);
    assert.throws(() => watcher!.subscribe({ kind: "services", query: {} }, counter()), /neither names nor regexp/);
    assert.throws(() => watcher!.subscribe({ kind: "services", query: { regexp: "(" } }, counter()), /services\.regexp '\(' is not a valid/);
    assert.equal(watcher.viewCount(), 0);
  });

  it("close() stops every view and ends in-flight queries", async () => {
    const consul = new FakeConsul();
    watcher = watch(consul);
    const sub = watcher.subscribe({ kind: "services", query: { names: ["web", "api"] } }, counter());
    await sub.ready;
    await consul.clock.runUntil(() => consul.inFlight === 2);
    watcher.close();
    assert.equal(watcher.viewCount(), 0);
    await consul.clock.runUntil(() => consul.inFlight === 0);
    assert.throws(() => watcher!.subscribe({ kind: "services", query: { names: ["web"] } }, counter()), /closed/);
  });

  it("warns once when more than 128 queries are watched", async () => {
    const warnings: string[] = [];
    watcher = watch(new FakeConsul(), { warn: (m) => warnings.push(m) });
    watcher.subscribe({ kind: "services", query: { names: Array.from({ length: 130 }, (_, i) => `s${i}`) } }, counter());
    assert.equal(warnings.length, 1);
    assert.match(warnings[0]!, /129 Consul queries/);
  });
});
