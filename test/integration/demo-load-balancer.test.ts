import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { readdir, readFile, readlink } from "node:fs/promises";
import { join } from "node:path";
import { Demo } from "../../scripts/demo/demo.ts";
import { FIREWALL_TASK, LB_TASK, failInstance, initialSync, joinInstance, prepareCatalog, publishService, type StepReport } from "../../scripts/demo/scenario.ts";
import { sample } from "../../scripts/demo/traffic.ts";
import { nginxForTests } from "../support/nginx.ts";
import { tools } from "../support/tools.ts";

/** Processes whose working dir or command line mentions `dir` (nginx workers, tofu, provisioner shells…). */
async function processesUsing(dir: string): Promise<string[]> {
  const found: string[] = [];
  for (const pid of await readdir("/proc")) {
    if (!/^\d+$/.test(pid) || Number(pid) === process.pid) continue;
    try {
      const cwd = await readlink(`/proc/${pid}/cwd`).catch(() => "");
      const cmd = (await readFile(`/proc/${pid}/cmdline`, "utf8").catch(() => "")).replace(/\0/g, " ");
      if (cwd.startsWith(dir) || cmd.includes(dir)) found.push(`${pid}: ${cmd.trim() || "(no cmdline)"} (cwd ${cwd})`);
    } catch {
      /* exited while we looked */
    }
  }
  return found;
}

/** Runs of a task that changed infrastructure (a no-op run would leave it untouched). */
function applied(demo: Demo, task: string): number {
  return demo.daemon!.logEvents(task).filter((e) => e.outcome === "applied").length;
}

/**
 * Live processes in a process group, from /proc. Zombies do not count: they have exited already, and
 * children orphaned by the daemon's exit (tsx's esbuild service) are reaped by PID 1 when it gets to it.
 */
async function groupMembers(pgid: number | undefined): Promise<string[]> {
  if (pgid === undefined) return [];
  const found: string[] = [];
  for (const pid of await readdir("/proc")) {
    if (!/^\d+$/.test(pid)) continue;
    const stat = await readFile(`/proc/${pid}/stat`, "utf8").catch(() => "");
    // pid (comm) state ppid pgrp …: comm may hold spaces, so split after its closing parenthesis.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    if (Number(fields[2]) === pgid && fields[0] !== "Z") found.push(`${pid} ${stat.slice(stat.indexOf("("), stat.lastIndexOf(")") + 1)} state ${fields[0]}`);
  }
  return found;
}

describe("demo: cts keeps an nginx pool and a firewall allow-list in sync with Consul", { timeout: 300_000 }, () => {
  const demo = new Demo({ tools: tools(), nginx: nginxForTests() });
  const upstreamFile = () => join(demo.env.upstreamDir, "upstream-web.conf");

  /** Many more requests than servers, on fresh connections: exactly `ids` answer, each of them. */
  async function assertTraffic(ids: string[]): Promise<void> {
    const s = await sample(demo.nginx!.url, 10 * ids.length);
    assert.deepEqual(s.ids, [...ids].sort(), `answers through nginx: ${JSON.stringify(s.byId)}`);
  }

  /** allow-list.json and allow-list.nft list exactly `ids`. */
  async function assertAllowList(ids: string[]): Promise<void> {
    const list = await demo.allowList();
    assert.ok(list, "allow-list.json exists");
    assert.deepEqual(list.allow.map((a) => a.id).sort(), [...ids].sort());
    const rules = (await demo.rulesFile()).split("\n").filter((l) => /daddr .* tcp dport \d+ accept/.test(l));
    assert.equal(rules.length, ids.length, `one accept rule per public instance:\n${rules.join("\n")}`);
  }

  function assertReport(r: StepReport, pool: string[]): void {
    assert.deepEqual(r.pool, pool);
    assert.deepEqual(r.traffic.ids, pool);
    assert.deepEqual(r.allowList, demo.taggedIds("public"));
  }

  before(async () => {
    await demo.start();
    await prepareCatalog(demo);
  });

  after(async () => {
    const groups = [demo.daemon?.process, demo.nginx?.process, demo.consul?.process].map((p) => p?.child.pid);
    const dir = demo.dir;
    await demo.stop();
    const left = (await Promise.all(groups.map(groupMembers))).flat();
    assert.deepEqual(left, [], "every process group the demo started is gone");
    assert.deepEqual(await processesUsing(dir), [], "no process still uses the demo's temp dir");
    assert.equal(existsSync(dir), false, "the temp dir is removed");
  });

  it("on start, traffic reaches web-1, web-2 and web-3 and the allow-list holds exactly the public services", async () => {
    const r = await initialSync(demo);
    assertReport(r, ["web-1", "web-2", "web-3"]);
    await assertTraffic(["web-1", "web-2", "web-3"]);
    await assertAllowList(["api-1", "lb"]);
    assert.ok(r.events[LB_TASK]!.some((e) => e.success && e.outcome === "applied"), "web-lb applied");
    assert.ok(r.events[FIREWALL_TASK]!.some((e) => e.success && e.outcome === "applied"), "allow-list applied");
  });

  it("an instance failing its health check leaves the pool, although it still serves", async () => {
    const firewallRuns = applied(demo, FIREWALL_TASK);
    const r = await failInstance(demo, "web-2");
    assertReport(r, ["web-1", "web-3"]);
    await assertTraffic(["web-1", "web-3"]);
    // Only Consul's verdict took it out: the instance itself answers as before.
    const direct = await fetch(`http://127.0.0.1:${demo.web.get("web-2")!.port}/`);
    assert.equal((await direct.text()).trim(), "web-2");
    assert.doesNotMatch(await readFile(upstreamFile(), "utf8"), /# web-2$/m);
    // The firewall's condition filters on the public tag in Consul, so web health never changes its data.
    assert.equal(applied(demo, FIREWALL_TASK), firewallRuns, "allow-list changed nothing");
  });

  it("a new instance joins the pool once its check passes", async () => {
    const r = await joinInstance(demo, "web-4");
    assertReport(r, ["web-1", "web-3", "web-4"]);
    await assertTraffic(["web-1", "web-3", "web-4"]);
    await assertAllowList(["api-1", "lb"]);
  });

  it("a new public service reaches the allow-list without touching the pool", async () => {
    const lbRuns = applied(demo, LB_TASK);
    const r = await publishService(demo, "docs-1");
    assertReport(r, ["web-1", "web-3", "web-4"]);
    await assertAllowList(["api-1", "docs-1", "lb"]);
    await assertTraffic(["web-1", "web-3", "web-4"]);
    assert.equal(applied(demo, LB_TASK), lbRuns, "web-lb changed nothing");
  });

  it("hostile catalog data is written as data: no directive injected, no interpolation, nothing outside the task dirs", async () => {
    const lbRuns = demo.daemon!.logEvents(LB_TASK).length;
    const fwRuns = demo.daemon!.logEvents(FIREWALL_TASK).length;
    // A passing `web` instance whose address would close the upstream block and open a server.
    await demo.registerService({ ID: "web-evil", Name: "web", Address: "127.0.0.1:1; } server { listen 127.0.0.1:1", Port: 80 });
    // A public service whose address would open the firewall to everyone.
    await demo.registerService({ ID: "wide-open", Name: "ssh", Address: "0.0.0.0/0", Port: 22, Tags: ["public"] });
    // A valid public service whose id Terraform would evaluate if it were not escaped.
    const literal = 'tpl-${file("/etc/hostname")}';
    await demo.registerService({ ID: literal, Name: "tpl", Address: "127.0.0.1", Port: 7000, Tags: ["public"] });
    await demo.daemon!.waitForRuns(LB_TASK, lbRuns + 1);
    await demo.daemon!.waitForRuns(FIREWALL_TASK, fwRuns + 1);
    await demo.waitForAllowList(["api-1", "docs-1", "lb", literal]);

    const upstream = await readFile(upstreamFile(), "utf8");
    assert.doesNotMatch(upstream, /listen/);
    assert.match(upstream, /Left out 1 instance\(s\)/);
    await assertTraffic(["web-1", "web-3", "web-4"]);
    execFileSync(demo.env.nginx, ["-t", "-q", "-p", demo.env.nginxPrefix, "-c", demo.env.nginxConf, "-e", demo.env.nginxErrorLog]);

    const list = (await demo.allowList())!;
    assert.ok(list.allow.some((a) => a.id === literal), "the id arrives byte for byte, not evaluated");
    const rules = await demo.rulesFile();
    assert.doesNotMatch(rules, /0\.0\.0\.0/);
    assert.match(rules, /Left out 1 instance\(s\)/);
    assert.deepEqual((await readdir(demo.env.upstreamDir)).sort(), ["upstream-web.conf"]);
    assert.deepEqual((await readdir(demo.env.firewallDir)).sort(), ["allow-list.json", "allow-list.nft"]);
  });
});
