import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { startConsul, type ConsulAgent } from "../support/consul.ts";
import { startRuntime, tempDir, waitFor, writeConfig } from "../support/cts.ts";
import { createConsulClient } from "../../src/consul/client.ts";

const read = (p: string) => readFile(p, "utf8").catch(() => "");

describe("Consul over HTTPS with client certificates (verify_incoming)", () => {
  let consul: ConsulAgent;
  let tmp: { dir: string; cleanup(): Promise<void> };

  before(async () => {
    consul = await startConsul({ tls: { verifyIncoming: true } });
    tmp = await tempDir();
    await consul.register({ Name: "web", ID: "web-1", Address: "10.0.0.1", Port: 80 });
  });
  after(async () => {
    await consul?.stop();
    await tmp?.cleanup();
  });

  it("watches and applies with the CA and a client certificate, Terraform's backend included", async () => {
    const members = join(tmp.dir, "members.txt");
    const tls = consul.tls!;
    const file = await writeConfig(tmp.dir, {
      consulAddress: consul.url,
      extra: `consul: { address: ${JSON.stringify(consul.url)}, tls: { caFile: ${JSON.stringify(tls.caFile)}, certFile: ${JSON.stringify(tls.certFile)}, keyFile: ${JSON.stringify(tls.keyFile)} } },`,
      tasks: [`new MemberList("members", ${JSON.stringify(members)})`],
    });
    const rt = await startRuntime(file);
    try {
      await waitFor(async () => (await read(members)).includes("web-1"), 30_000, "the first apply over TLS");
      await consul.register({ Name: "web", ID: "web-2", Address: "10.0.0.2", Port: 80 });
      await waitFor(async () => (await read(members)).includes("web-2"), 20_000, "the change over TLS");
      const state = await consul.api("GET", "/v1/kv/consul-terraform-sync/terraform-env:members");
      assert.equal(state.length, 1, "Terraform's consul backend stored state over TLS");
    } finally {
      await rt.close();
    }
  });

  it("a client without a certificate is refused with a clear error", async () => {
    const api = createConsulClient({ address: consul.url, tls: { caFile: consul.tls!.caFile } });
    try {
      await assert.rejects(api.catalogServices({}), (e: any) => e.code?.startsWith("CONSUL_") && /client certificate/i.test(e.message));
    } finally {
      api.close();
    }
  });

  it("a client that does not trust the CA is refused", async () => {
    const api = createConsulClient({ address: consul.url, tls: { certFile: consul.tls!.certFile, keyFile: consul.tls!.keyFile } });
    try {
      await assert.rejects(api.catalogServices({}), (e: any) => e.code === "CONSUL_TLS_FAILED" && /not signed by a CA cts trusts\. Set consul\.tls\.caFile/.test(e.message));
    } finally {
      api.close();
    }
  });
});
