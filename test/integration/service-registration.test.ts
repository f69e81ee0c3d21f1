import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { createServer, type Server } from "node:http";
import { join } from "node:path";
import { writeFile } from "node:fs/promises";
import { startConsul, type ConsulAgent } from "../support/consul.ts";
import { tempDir, waitFor } from "../support/cts.ts";
import { startCtsProcess } from "../support/cts-process.ts";
import { createConsulClient, type ConsulClient } from "../../src/consul/client.ts";
import { registerSelf } from "../../src/daemon/registration.ts";
import { readCtsConfig } from "../../src/cts/config/load.ts";
import { createLogger } from "../../src/log/logger.ts";

type AgentService = { ID: string; Service: string; Tags: string[]; Address: string; Port: number };
type AgentCheck = { CheckID: string; Name: string; Notes: string; ServiceID: string; Status: string; Definition?: { HTTP?: string } };

/** A CTS config's `consul { service_registration { … } }`, read as `cts start -config-file` reads it. */
async function registrationOf(dir: string, consul: ConsulAgent, block: string) {
  const file = join(dir, `cts-${Math.random().toString(36).slice(2)}.hcl`);
  await writeFile(file, `consul {\n  address = "${consul.address}"\n${block}\n}\n`);
  return (await readCtsConfig([file], dir)).config.consul?.serviceRegistration;
}

describe("service_registration on a real Consul agent (as CTS registers itself)", () => {
  let consul: ConsulAgent;
  let dir: { dir: string; cleanup(): Promise<void> };
  let health: Server;
  let healthPort = 0;
  const lines: string[] = [];
  const log = createLogger({ write: (l) => lines.push(l) });

  before(async () => {
    consul = await startConsul();
    dir = await tempDir();
    // Stands in for the API at the check's configured address: answers /base/v1/health.
    health = createServer((req, res) => res.writeHead(req.url === "/base/v1/health" ? 200 : 404).end('{"status":"healthy"}'));
    await new Promise<void>((r) => health.listen(0, "127.0.0.1", r));
    healthPort = (health.address() as { port: number }).port;
  });

  after(async () => {
    for (const c of clients) c.close();
    await new Promise((r) => health?.close(r));
    await consul?.stop();
    await dir?.cleanup();
  });

  const clients: ConsulClient[] = [];
  // One client per registration, as a daemon has one; all closed at the end.
  const conn = () => {
    const c = createConsulClient({ address: consul.address });
    clients.push(c);
    return c;
  };
  const services = async () => (await consul.api("GET", "/v1/agent/services")) as Record<string, AgentService>;
  const checks = async () => (await consul.api("GET", "/v1/agent/checks")) as Record<string, AgentCheck>;

  it("registers with CTS's defaults: service consul-terraform-sync, tag cts, the id, and the /v1/health check critical until it passes", async () => {
    const registration = await registrationOf(dir.dir, consul, "  service_registration {}");
    assert.equal(registration, undefined, "an empty block is every default");
    const reg = await registerSelf(conn(), { id: "cts-defaults", address: "0.0.0.0", port: 8558, log });
    try {
      const svc = (await services())["cts-defaults"]!;
      assert.deepEqual({ name: svc.Service, tags: svc.Tags, port: svc.Port, address: svc.Address }, { name: "consul-terraform-sync", tags: ["cts"], port: 8558, address: "" });
      const check = (await checks())["cts-defaults-health"]!;
      assert.equal(check.Name, "CTS Health Status");
      assert.equal(check.Notes, "Check created by Consul-Terraform-Sync");
      assert.equal(check.ServiceID, "cts-defaults");
      assert.equal(check.Status, "critical", "nothing answers on 8558: the check stays critical");
    } finally {
      await reg.deregister();
    }
    assert.equal((await services())["cts-defaults"], undefined, "deregistered on stop");
  });

  it("puts the registration back when the agent loses it without an outage (deregistered by hand), and not after its own deregistration", async () => {
    const reg = await registerSelf(conn(), { id: "cts-restored", address: "127.0.0.1", port: 8558, log, checkEveryMs: 200 });
    try {
      assert.ok((await services())["cts-restored"], "registered");
      await consul.api("PUT", "/v1/agent/service/deregister/cts-restored");
      await waitFor(async () => (await services())["cts-restored"] !== undefined, 30_000, "the registration put back");
    } finally {
      await reg.deregister();
    }
    assert.equal((await services())["cts-restored"], undefined, "deregistered on stop (the check stops with it, and one in flight puts nothing back)");
  });

  it("uses service_name, address and default_check.address (the path joined with /v1/health); the check passes there", async () => {
    const registration = await registrationOf(
      dir.dir,
      consul,
      `  service_registration {\n    service_name = "cts-east"\n    address = "10.1.2.3"\n    default_check {\n      address = "http://127.0.0.1:${healthPort}/base"\n    }\n  }`,
    );
    assert.deepEqual(registration, { serviceName: "cts-east", address: "10.1.2.3", defaultCheck: { address: `http://127.0.0.1:${healthPort}/base` } });
    const reg = await registerSelf(conn(), { id: "cts-configured", address: "127.0.0.1", port: 8600, log, registration: registration! });
    try {
      const svc = (await services())["cts-configured"]!;
      assert.deepEqual({ name: svc.Service, tags: svc.Tags, address: svc.Address, port: svc.Port }, { name: "cts-east", tags: ["cts"], address: "10.1.2.3", port: 8600 });
      const catalog = (await consul.api("GET", "/v1/catalog/service/cts-east")) as Array<{ ServiceID: string }>;
      assert.deepEqual(catalog.map((s) => s.ServiceID), ["cts-configured"]);
      // The agent runs the check against the configured address; wait for it to pass (event, not time).
      await waitFor(async () => (await checks())["cts-configured-health"]?.Status === "passing", 60_000, "the check at the configured address to pass");
    } finally {
      await reg.deregister();
    }
  });

  it("registers without a check when default_check { enabled = false }", async () => {
    const registration = await registrationOf(dir.dir, consul, "  service_registration {\n    default_check {\n      enabled = false\n    }\n  }");
    assert.deepEqual(registration, { defaultCheck: false });
    const reg = await registerSelf(conn(), { id: "cts-nocheck", address: "127.0.0.1", port: 8601, log, registration: registration! });
    try {
      assert.ok((await services())["cts-nocheck"]);
      assert.deepEqual(Object.values(await checks()).filter((c) => c.ServiceID === "cts-nocheck"), []);
    } finally {
      await reg.deregister();
    }
  });

  it("does not register when enabled = false", async () => {
    const registration = await registrationOf(dir.dir, consul, "  service_registration {\n    enabled = false\n  }");
    assert.deepEqual(registration, { enabled: false });
    const reg = await registerSelf(conn(), { id: "cts-off", address: "127.0.0.1", port: 8602, log, registration: registration! });
    assert.equal(reg.registered, false);
    assert.equal((await services())["cts-off"], undefined);
  });

  it("sends the namespace (CTS puts it in the body, cts in the client's namespace header); Consul CE refuses it (400), cts logs why and keeps running", async () => {
    const registration = await registrationOf(dir.dir, consul, '  service_registration {\n    namespace = "team-a"\n  }');
    assert.deepEqual(registration, { namespace: "team-a" });
    lines.length = 0;
    const reg = await registerSelf(conn(), { id: "cts-ns", address: "127.0.0.1", port: 8603, log, registration: registration! });
    assert.equal(reg.registered, false);
    assert.equal((await services())["cts-ns"], undefined);
    const warning = lines.find((l) => l.includes("could not register service 'consul-terraform-sync' (id 'cts-ns')"));
    assert.ok(warning, lines.join("\n"));
    assert.match(warning!, /400/);
    assert.match(warning!, /Namespace/);
    assert.match(warning!, /Consul is Enterprise \(namespaces\)/);
  });
});

describe("a daemon started from a CTS config registers with its service_registration", () => {
  let consul: ConsulAgent;
  let dir: { dir: string; cleanup(): Promise<void> };
  before(async () => {
    consul = await startConsul();
    dir = await tempDir();
  });
  after(async () => {
    await consul?.stop();
    await dir?.cleanup();
  });

  it("registers under service_name with no check, and deregisters at stop", async () => {
    const file = join(dir.dir, "cts.hcl");
    await writeFile(
      file,
      `id = "cts-e2e"\nport = 0\nworking_dir = "${join(dir.dir, "sync-tasks")}"\nconsul {\n  address = "${consul.address}"\n  service_registration {\n    service_name = "cts-from-hcl"\n    default_check {\n      enabled = false\n    }\n  }\n}\n`,
    );
    const cts = startCtsProcess(file);
    try {
      await cts.waitForLine(/registered service 'cts-from-hcl' with id 'cts-e2e'/, 60_000);
      const svc = ((await consul.api("GET", "/v1/agent/services")) as Record<string, AgentService>)["cts-e2e"]!;
      assert.deepEqual({ name: svc.Service, tags: svc.Tags }, { name: "cts-from-hcl", tags: ["cts"] });
      assert.deepEqual(Object.values((await consul.api("GET", "/v1/agent/checks")) as Record<string, AgentCheck>).filter((c) => c.ServiceID === "cts-e2e"), []);
      await cts.waitForLine(/ctrl: executing all tasks once through/, 60_000);
    } finally {
      await cts.terminate();
    }
    assert.equal(((await consul.api("GET", "/v1/agent/services")) as Record<string, unknown>)["cts-e2e"], undefined, "deregistered at stop");
  });
});
