import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { configApiAddress, daemonAddress } from "../../src/cli/daemon-address.ts";

const PUBLIC_API = fileURLToPath(new URL("../../src/index.ts", import.meta.url));

describe("the daemon address every API command uses (cts status, task, drift, approve, reject)", () => {
  let dir: string;
  let other: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), "cts-addr-"));
    other = await mkdtemp(join(tmpdir(), "cts-addr-none-"));
    const config = (port: number) => `import { defineConfig } from ${JSON.stringify(PUBLIC_API)};\nexport default defineConfig({ api: { port: ${port} }, tasks: [] });\n`;
    await writeFile(join(dir, "cts.config.ts"), config(9123));
    await writeFile(join(other, "elsewhere.config.ts"), config(9456));
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
    await rm(other, { recursive: true, force: true });
  });

  it("takes --http-addr first, then CTS_ADDRESS, then the config's api settings, then http://127.0.0.1:8558", async () => {
    assert.equal(await daemonAddress({ httpAddr: "10.0.0.1:1" }, { CTS_ADDRESS: "10.0.0.2:2" }, dir), "http://10.0.0.1:1");
    assert.equal(await daemonAddress({}, { CTS_ADDRESS: "10.0.0.2:2" }, dir), "http://10.0.0.2:2");
    assert.equal(await daemonAddress({}, {}, dir), "http://127.0.0.1:9123", "cts.config.ts in the current directory");
    assert.equal(await daemonAddress({ config: join(other, "elsewhere.config.ts") }, {}, dir), "http://127.0.0.1:9456", "--config");
    assert.equal(await daemonAddress({}, { CTS_ADDRESS: " " }, other), "http://127.0.0.1:8558", "no config: CTS's default");
  });

  it("reaches an API listening on every interface through loopback, and one with TLS over https", () => {
    assert.equal(configApiAddress(undefined), "http://127.0.0.1:8558");
    assert.equal(configApiAddress({ address: "0.0.0.0", port: 9000 }), "http://127.0.0.1:9000");
    assert.equal(configApiAddress({ address: "::", port: 9000 }), "http://[::1]:9000");
    assert.equal(configApiAddress({ address: "fd00::5" }), "http://[fd00::5]:8558");
    assert.equal(configApiAddress({ address: "cts.internal", tls: { certFile: "c", keyFile: "k" } }), "https://cts.internal:8558");
    assert.equal(configApiAddress({ port: 0 }), undefined, "a free port is known only to the daemon");
  });
});
