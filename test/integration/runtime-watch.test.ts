import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { startConsul, type ConsulAgent } from "../support/consul.ts";
import { startCountingProxy, type CountingProxy } from "../support/counting-proxy.ts";
import { startRuntime, tempDir, waitFor, writeConfig, type TestRuntime } from "../support/cts.ts";

const web = (id: string, port = 80, extra: Record<string, unknown> = {}) => ({ Name: "web", ID: id, Address: `10.0.0.${id.replace(/\D/g, "") || 9}`, Port: port, ...extra });
const read = (p: string) => readFile(p, "utf8").catch(() => "");
const applies = (rt: TestRuntime, task: string) => rt.lines.filter((l) => l.includes(`task '${task}': applied`)).length;
const ids = (text: string) => text.trim().split("\n").filter(Boolean).map((l) => l.split(" ")[0]);

describe("the daemon keeps infrastructure in sync with the catalog (real Consul, real OpenTofu)", () => {
  let consul: ConsulAgent;
  let proxy: CountingProxy;
  let tmp: { dir: string; cleanup(): Promise<void> };
  let rt: TestRuntime;
  let members: string;

  before(async () => {
    consul = await startConsul();
    // The runtime reaches Consul through a counting proxy, so a test can see which index the watch has reached.
    proxy = await startCountingProxy(consul.url);
    tmp = await tempDir();
    members = join(tmp.dir, "members.txt");
    await consul.register(web("web-1"));
    await consul.register({ Name: "db", ID: "db-1", Port: 5432 });
    const file = await writeConfig(tmp.dir, {
      consulAddress: proxy.address,
      tasks: [`new MemberList("members", ${JSON.stringify(members)})`, `new FailingTask("failing", ${JSON.stringify(join(tmp.dir, "blocker"))}, "db")`],
    });
    await writeFile(join(tmp.dir, "blocker"), "a regular file");
    rt = await startRuntime(file);
    await waitFor(async () => ids(await read(members)).join() === "web-1", 30_000, "the first apply");
  });
  after(async () => {
    await rt?.close();
    await proxy?.stop();
    await consul?.stop();
    await tmp?.cleanup();
  });

  it("applies a registration, a health failure and a deregistration", async () => {
    await consul.register(web("web-2", 81, { Check: { CheckID: "web-2-ttl", TTL: "30s", Status: "passing" } }));
    await waitFor(async () => ids(await read(members)).join() === "web-1,web-2", 20_000, "web-2 joining");
    await consul.api("PUT", "/v1/agent/check/fail/web-2-ttl");
    await waitFor(async () => ids(await read(members)).join() === "web-1", 20_000, "web-2 leaving on a failing check");
    await consul.api("PUT", "/v1/agent/check/pass/web-2-ttl");
    await waitFor(async () => ids(await read(members)).join() === "web-1,web-2", 20_000, "web-2 passing again");
    await consul.deregister("web-2");
    await waitFor(async () => ids(await read(members)).join() === "web-1", 20_000, "web-2 deregistered");
  });

  it("does not run Terraform when a re-registration leaves the data identical", async () => {
    await rt.controller.idle();
    const before = rt.lines.length;
    const changes = rt.controller.changeCount("members");
    await consul.register(web("web-1"));
    // Wait until the watch has taken Consul's answer for the re-registration: its next blocking
    // query asks for an index at or past the catalog's index after the write.
    const res = await fetch(`${consul.url}/v1/health/service/web`);
    const index = BigInt(res.headers.get("x-consul-index") ?? "0");
    await res.arrayBuffer();
    const seen = () => proxy.requests().some((r) => r.path === "/v1/health/service/web" && BigInt(new URLSearchParams(r.query).get("index") ?? "0") >= index);
    await waitFor(seen, 20_000, "the watch to reach the re-registration's index");
    await rt.controller.whenIdle();
    assert.equal(rt.controller.changeCount("members"), changes, "the identical data reached no trigger");
    const runs = rt.lines.slice(before).filter((l) => /task 'members': (applied|no-op)/.test(l));
    assert.deepEqual(runs, [], "no run for identical data");
  });

  it("records a failing task as errored, keeps the others working, and retries on the next change", async () => {
    await waitFor(() => rt.controller.events.list("failing").length >= 1, 30_000, "the failing task's first event");
    assert.equal(rt.controller.events.status("failing"), "errored");
    const ev = rt.controller.events.list("failing")[0]!;
    assert.equal(ev.success, false);
    assert.match(ev.error!.message, /Task 'failing'/);
    const failuresBefore = rt.controller.events.list("failing").length;
    await consul.register({ Name: "db", ID: "db-2", Port: 5432 });
    await consul.register(web("web-3"));
    await waitFor(async () => ids(await read(members)).join() === "web-1,web-3", 20_000, "the healthy task still applies");
    await waitFor(() => rt.controller.events.list("failing").length > failuresBefore, 20_000, "the failing task retried");
    assert.equal(rt.controller.events.status("failing"), "critical");
    await consul.deregister("web-3");
    await waitFor(async () => ids(await read(members)).join() === "web-1", 20_000, "web-3 gone");
  });

  it("survives a Consul restart and applies the first change after it", async () => {
    await consul.restart();
    await consul.register(web("web-1"));
    await consul.register(web("web-4"));
    await waitFor(async () => ids(await read(members)).join() === "web-1,web-4", 60_000, "the change after the restart");
  });
});

describe("buffering and the work queue", () => {
  let consul: ConsulAgent;
  let tmp: { dir: string; cleanup(): Promise<void> };
  after(async () => {
    await consul?.stop();
    await tmp?.cleanup();
  });

  it("collapses 5 rapid changes inside the buffer period into one apply", async () => {
    consul = await startConsul();
    tmp = await tempDir();
    const members = join(tmp.dir, "buffered.txt");
    await consul.register(web("web-1"));
    const file = await writeConfig(tmp.dir, {
      consulAddress: consul.address,
      extra: `bufferPeriod: { min: "3s", max: "12s" },`,
      tasks: [`new MemberList("buffered", ${JSON.stringify(members)}, "web", null)`],
    });
    const rt = await startRuntime(file);
    try {
      await waitFor(async () => (await read(members)).includes("web-1"), 30_000, "the first apply");
      await rt.controller.idle();
      const before = applies(rt, "buffered");
      // Five changes, each seen by the task before the next is made: five triggers, not one
      // answer that happens to hold them all.
      for (let i = 2; i <= 6; i++) {
        const changes = rt.controller.changeCount("buffered");
        await consul.register(web(`web-${i}`));
        await waitFor(() => rt.controller.changeCount("buffered") > changes, 20_000, `web-${i} to reach the task`);
      }
      assert.equal(applies(rt, "buffered") - before, 0, "nothing applied while the changes kept coming");
      await waitFor(async () => ids(await read(members)).length === 6, 20_000, "all six instances");
      // Nothing queued, running or waiting in a buffer: no further run can come without new data.
      await rt.controller.whenIdle();
      assert.equal(applies(rt, "buffered") - before, 1, "exactly one apply for the burst");
    } finally {
      await rt.close();
    }
  });

  it("runs exactly once more, with the latest data, when changes arrive during an apply", async () => {
    const members = join(tmp.dir, "slow.txt");
    const file = await writeConfig(tmp.dir, {
      consulAddress: consul.address,
      tasks: [`new SlowMembers("slow", ${JSON.stringify(members)}, 3)`],
    });
    const rt = await startRuntime(file);
    try {
      await waitFor(async () => (await read(members)).length > 0, 40_000, "the first apply");
      await rt.controller.idle();
      const before = applies(rt, "slow");
      await consul.register(web("web-7"));
      await waitFor(() => rt.lines.some((l) => l.includes("[slow]") && /Creating|Destroying/.test(l)), 20_000, "the second apply starting");
      await consul.register(web("web-8"));
      await consul.register(web("web-9"));
      await waitFor(async () => (await read(members)).includes("web-9"), 40_000, "the latest data applied");
      await rt.controller.whenIdle();
      assert.equal(applies(rt, "slow") - before, 2, "one run for web-7, exactly one more for web-8 and web-9");
    } finally {
      await rt.close();
    }
  });
});

describe("sharing blocking queries", () => {
  it("makes one blocking query for two tasks on the same service", async () => {
    const consul = await startConsul();
    const proxy = await startCountingProxy(consul.url);
    const tmp = await tempDir();
    try {
      await consul.register(web("web-1"));
      const file = await writeConfig(tmp.dir, {
        consulAddress: proxy.address,
        tasks: [`new MemberList("a", ${JSON.stringify(join(tmp.dir, "a.txt"))})`, `new MemberList("b", ${JSON.stringify(join(tmp.dir, "b.txt"))})`],
      });
      const rt = await startRuntime(file);
      try {
        await waitFor(async () => (await read(join(tmp.dir, "a.txt"))) && (await read(join(tmp.dir, "b.txt"))), 40_000, "both tasks applied");
        await consul.register(web("web-2"));
        await waitFor(async () => (await read(join(tmp.dir, "b.txt"))).includes("web-2"), 20_000, "both updated");
        assert.equal(proxy.maxInFlight("/v1/health/service/web"), 1, "one open blocking query on web");
      } finally {
        await rt.close();
      }
    } finally {
      await proxy.stop();
      await consul.stop();
      await tmp.cleanup();
    }
  });
});

describe("schedule tasks", () => {
  it("run on their cron with the latest input data, and inputs alone do not trigger them", async () => {
    const consul = await startConsul();
    const tmp = await tempDir();
    try {
      await consul.register(web("web-1"));
      const out = join(tmp.dir, "scheduled.txt");
      const file = await writeConfig(tmp.dir, { consulAddress: consul.address, tasks: [`new ScheduledMembers("nightly", ${JSON.stringify(out)}, "*/3 * * * * *")`] });
      const rt = await startRuntime(file);
      try {
        await waitFor(async () => (await read(out)) === "web-1", 30_000, "the first run");
        await consul.register(web("web-2"));
        await waitFor(async () => (await read(out)) === "web-1,web-2", 60_000, "the next scheduled run");
        // The file is written during the apply; the run is logged right after it.
        await waitFor(() => rt.lines.filter((l) => /task 'nightly': (applied|no-op)/.test(l)).length >= 2, 60_000, "two logged runs");
      } finally {
        await rt.close();
      }
    } finally {
      await consul.stop();
      await tmp.cleanup();
    }
  });
});
