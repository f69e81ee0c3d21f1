import { describe, it, after } from "node:test";
import assert from "node:assert/strict";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { readTlsFiles, type TlsFileProblem } from "../../src/tls-files.ts";

const CERT = (n: string) => `-----BEGIN CERTIFICATE-----\n${n}\n-----END CERTIFICATE-----\n`;
const tmp = await mkdtemp(join(tmpdir(), "cts-tls-files-"));
after(() => rm(tmp, { recursive: true, force: true }));

/** What `fail` was given, thrown back so the test can look at it. */
const problemOf = (fn: () => unknown): TlsFileProblem => {
  try {
    fn();
  } catch (err) {
    return err as TlsFileProblem;
  }
  assert.fail("no problem reported");
};
const rethrow = (p: TlsFileProblem): never => {
  throw p;
};

describe("the one reader of TLS files", () => {
  it("reads the CA file, the certificate and the key; the CA file wins over a CA folder", async () => {
    await writeFile(join(tmp, "ca.pem"), CERT("ca"));
    await writeFile(join(tmp, "cert.pem"), CERT("me"));
    await writeFile(join(tmp, "key.pem"), "KEY");
    const pems = readTlsFiles({ caFile: join(tmp, "ca.pem"), caPath: join(tmp, "nowhere"), cert: join(tmp, "cert.pem"), key: join(tmp, "key.pem") }, rethrow);
    assert.equal(String(pems.ca), CERT("ca"));
    assert.equal(String(pems.cert), CERT("me"));
    assert.equal(String(pems.key), "KEY");
    assert.deepEqual(readTlsFiles({}, rethrow), {});
  });

  it("takes every certificate file under a CA folder, sub-folders included, and passes over other files", async () => {
    const dir = join(tmp, "cas");
    await mkdir(join(dir, "more"), { recursive: true });
    await writeFile(join(dir, "a.pem"), CERT("a"));
    await writeFile(join(dir, "more", "b.crt"), CERT("b"));
    await writeFile(join(dir, "server.key"), "-----BEGIN PRIVATE KEY-----\n");
    const { ca } = readTlsFiles({ caPath: dir }, rethrow);
    assert.deepEqual((ca as Buffer[]).map(String), [CERT("a"), CERT("b")]);
  });

  it("hands a file it cannot use to the caller, with its role and why", async () => {
    const missing = problemOf(() => readTlsFiles({ cert: join(tmp, "missing.pem") }, rethrow));
    assert.deepEqual([missing.role, missing.code, missing.why], ["cert", "ENOENT", "ENOENT"]);
    const empty = join(tmp, "empty");
    await mkdir(empty);
    const none = problemOf(() => readTlsFiles({ caPath: empty }, rethrow));
    assert.deepEqual([none.role, none.file, none.code, none.why], ["caPath", empty, undefined, "it holds no PEM certificate"]);
  });
});
