import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { request } from "node:https";
import { join } from "node:path";
import { tempDir } from "../support/cts.ts";
import { tools } from "../support/tools.ts";
import { createApiServer, type ApiServer } from "../../src/api/server.ts";
import type { ApiController } from "../../src/api/deps.ts";
import { readCtsConfig } from "../../src/cts/config/load.ts";
import { createLogger } from "../../src/log/logger.ts";
import { CtsError } from "../../src/errors/cts-error.ts";

/** A CA (made with `consul tls`, as the other TLS tests) and a client certificate it signed, in `dir`. */
function makeCa(dir: string, domain: string) {
  mkdirSync(dir, { recursive: true });
  const run = (args: string[]) => execFileSync(tools().consul, args, { cwd: dir, stdio: "pipe" });
  run(["tls", "ca", "create", "-domain", domain]);
  run(["tls", "cert", "create", "-server", "-domain", domain, "-dc", "api", "-additional-ipaddress", "127.0.0.1"]);
  run(["tls", "cert", "create", "-client", "-domain", domain, "-dc", "api"]);
  return {
    ca: join(dir, `${domain}-agent-ca.pem`),
    serverCert: join(dir, `api-server-${domain}-0.pem`),
    serverKey: join(dir, `api-server-${domain}-0-key.pem`),
    clientCert: join(dir, `api-client-${domain}-0.pem`),
    clientKey: join(dir, `api-client-${domain}-0-key.pem`),
  };
}

function get(url: string, ca: string, client?: { clientCert: string; clientKey: string }): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(url, { ca: readFileSync(ca), ...(client ? { cert: readFileSync(client.clientCert), key: readFileSync(client.clientKey) } : {}) }, (res) => {
      res.resume();
      res.on("end", () => resolve(res.statusCode ?? 0));
    });
    req.on("error", reject);
    req.end();
  });
}

describe("the API's tls.ca_path: client certificates checked against a directory of CAs (CTS's mTLS with ca_path)", () => {
  let tmp: { dir: string; cleanup(): Promise<void> };
  let server: ApiServer;
  let url: string;
  let one: ReturnType<typeof makeCa>;
  let two: ReturnType<typeof makeCa>;
  let stranger: ReturnType<typeof makeCa>;

  before(async () => {
    tmp = await tempDir();
    one = makeCa(join(tmp.dir, "one"), "one");
    two = makeCa(join(tmp.dir, "two"), "two");
    stranger = makeCa(join(tmp.dir, "stranger"), "stranger");
    // The CA directory: two CAs (one in a sub-directory) and a file that is no certificate.
    const caDir = join(tmp.dir, "cas");
    mkdirSync(join(caDir, "more"), { recursive: true });
    copyFileSync(one.ca, join(caDir, "one.pem"));
    copyFileSync(two.ca, join(caDir, "more", "two.crt"));
    writeFileSync(join(caDir, "README"), "CA certificates for the cts API\n");
    const file = join(tmp.dir, "cts.hcl");
    writeFileSync(file, `tls {\n  enabled = true\n  cert = "${one.serverCert}"\n  key = "${one.serverKey}"\n  verify_incoming = true\n  ca_path = "${caDir}"\n}\n`);
    const { config } = await readCtsConfig([file], tmp.dir);
    assert.deepEqual(config.api?.tls, { certFile: one.serverCert, keyFile: one.serverKey, caPath: caDir, verifyIncoming: true });
    server = createApiServer({ controller: {} as ApiController, log: createLogger({ level: "error" }), health: async () => undefined }, { tls: config.api!.tls! });
    url = (await server.listen(0, "127.0.0.1")).url;
  });

  after(async () => {
    await server?.close();
    await tmp?.cleanup();
  });

  it("accepts a client certificate signed by any CA in the directory, sub-directories included", async () => {
    assert.equal(await get(`${url}/v1/health`, one.ca, one), 200);
    assert.equal(await get(`${url}/v1/health`, one.ca, two), 200);
  });

  it("refuses a client without a certificate, and one signed by a CA outside the directory", async () => {
    await assert.rejects(get(`${url}/v1/health`, one.ca), /certificate|socket hang up|ECONNRESET|alert/i);
    await assert.rejects(get(`${url}/v1/health`, one.ca, stranger), /certificate|unknown ca|socket hang up|ECONNRESET|alert/i);
  });

  it("refuses a directory without certificates, naming the setting", () => {
    const empty = join(tmp.dir, "empty");
    mkdirSync(empty);
    assert.throws(
      () => createApiServer({ controller: {} as ApiController, log: createLogger({ level: "error" }) }, { tls: { certFile: one.serverCert, keyFile: one.serverKey, caPath: empty, verifyIncoming: true } }),
      (err: unknown) => err instanceof CtsError && err.code === "API_TLS_FILE" && /api\.tls\.caPath '.*empty' \(it holds no PEM certificate\)/.test(err.message),
    );
  });
});
