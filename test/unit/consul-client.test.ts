import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { createConsulClient, type ConsulClient } from "../../src/consul/client.ts";
import { HaKv } from "../../src/ha/kv.ts";
import { createLogger } from "../../src/log/logger.ts";

/** What the stand-in agent saw of one request. */
interface Seen {
  method: string;
  path: string;
  socket: number;
  token: string | undefined;
  namespace: string | undefined;
  authorization: string | undefined;
}

/** A stand-in for the agent's HTTP API (unit level: the real agent is in test/integration/consul-client.test.ts). */
describe("the one Consul client", () => {
  let server: Server;
  let address = "";
  let connections = 0;
  const seen: Seen[] = [];
  const socketIds = new WeakMap<object, number>();
  before(async () => {
    server = createServer((req: IncomingMessage, res) => {
      let id = socketIds.get(req.socket);
      if (id === undefined) socketIds.set(req.socket, (id = ++connections));
      const url = new URL(req.url ?? "/", "http://x");
      seen.push({
        method: req.method ?? "",
        path: url.pathname,
        socket: id,
        token: req.headers["x-consul-token"] as string | undefined,
        namespace: req.headers["x-consul-namespace"] as string | undefined,
        authorization: req.headers.authorization,
      });
      req.resume();
      req.on("end", () => {
        res.writeHead(200, { "content-type": "application/json", "x-consul-index": "7" });
        // A health answer with an entry: an empty one without a token would add the ACL check's request.
        res.end(url.pathname.startsWith("/v1/kv/") && req.method === "PUT" ? "true" : url.pathname.startsWith("/v1/health/") ? '[{"Node":{},"Service":{}}]' : "[]");
      });
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    address = `127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => new Promise<void>((r) => server.close(() => r())));

  /** A package call (a KV write) and a raw GET (a health read), in that order. */
  async function bothPaths(client: ConsulClient, namespace?: string): Promise<[Seen, Seen]> {
    const from = seen.length;
    await new HaKv(client, namespace).put("app/key", "v");
    await client.healthService({ service: "web", ...(namespace ? { namespace } : {}) });
    assert.equal(seen.length, from + 2);
    return [seen[from]!, seen[from + 1]!];
  }

  it("sends the consul package's calls and the watch's raw GETs over one keep-alive socket pool", async () => {
    const client = createConsulClient({ address, token: "first" }, {});
    try {
      const before = connections;
      const [put, get] = await bothPaths(client);
      assert.deepEqual([put.method, put.path, get.method, get.path], ["PUT", "/v1/kv/app%2Fkey", "GET", "/v1/health/service/web"]);
      assert.equal(get.socket, put.socket, "the raw GET reuses the socket the package's call left in the pool");
      assert.equal(connections - before, 1, "one connection for both paths");
    } finally {
      client.close();
    }
  });

  it("after stopCalling (a stop while Consul is unreachable) makes no call on either path: each fails at once, counted", async () => {
    const client = createConsulClient({ address }, {});
    try {
      await bothPaths(client);
      const from = seen.length;
      client.stopCalling("cts is stopping and Consul is unreachable");
      await assert.rejects(new HaKv(client).put("app/key", "v"), (e: Error & { code?: string }) => e.code === "CONSUL_UNREACHABLE" && /cts is stopping and Consul is unreachable/.test(e.message));
      await assert.rejects(client.healthService({ service: "web" }), (e: Error & { code?: string }) => e.code === "CONSUL_UNREACHABLE" && /not reading the health of service "web"/.test(e.message));
      assert.equal(seen.length, from, "nothing reached the agent");
      assert.equal(client.refusedCalls(), 2);
      assert.equal(client.reachability.reachable, true, "a refused call says nothing about Consul");
    } finally {
      client.close();
    }
  });

  it("sends a rotated token on both paths from the next call on, and puts it in Terraform's environment", async () => {
    const client = createConsulClient({ address, token: "first" }, {});
    try {
      const env = client.terraformEnv;
      const [put, get] = await bothPaths(client);
      assert.deepEqual([put.token, get.token, env.CONSUL_HTTP_TOKEN], ["first", "first", "first"]);
      client.rotateToken("second");
      const [put2, get2] = await bothPaths(client);
      assert.deepEqual([put2.token, get2.token], ["second", "second"]);
      assert.equal(env.CONSUL_HTTP_TOKEN, "second", "the same object, updated in place, so a driver holding it sees the new token");
      assert.equal(client.connection().token, "second");
      assert.equal(put2.socket, put.socket, "a rotation keeps the socket pool");
    } finally {
      client.close();
    }
  });

  it("tells its listeners when the token changes (so waiting reads are sent again), not when it stays", async () => {
    const client = createConsulClient({ address, token: "first" }, {});
    try {
      let told = 0;
      const stop = client.onTokenChange(() => told++);
      client.rotateToken("first");
      assert.equal(told, 0, "the same token is no change");
      client.rotateToken("second");
      assert.equal(told, 1);
      stop();
      client.rotateToken("third");
      assert.equal(told, 1, "unsubscribed");
    } finally {
      client.close();
    }
  });

  it("with a token source, the first call waits for its token; a failed read fails the calls and the next call tries again", async () => {
    let attempts = 0;
    let onToken: ((t: string) => void) | undefined;
    const source = {
      origin: "the Vault secret 'secret/data/cts'",
      current: async () => {
        attempts++;
        if (attempts === 1) throw new Error("consul.token: Vault is down");
        return "from-vault";
      },
      follow: (f: (t: string) => void) => ((onToken = f), () => (onToken = undefined)),
      close: () => {},
    };
    const client = createConsulClient({ address }, { tokenSource: source });
    try {
      await assert.rejects(bothPaths(client), /Vault is down/);
      const [put, get] = await bothPaths(client);
      assert.deepEqual([put.token, get.token, client.terraformEnv.CONSUL_HTTP_TOKEN], ["from-vault", "from-vault", "from-vault"]);
      assert.equal(attempts, 2, "read again after the failure, then kept");
      onToken?.("rotated-in-vault");
      const [put2] = await bothPaths(client);
      assert.equal(put2.token, "rotated-in-vault");
    } finally {
      client.close();
    }
  });

  it("sends the namespace on both paths", async () => {
    const client = createConsulClient({ address }, {});
    try {
      const [put, get] = await bothPaths(client, "team-a");
      assert.deepEqual([put.namespace, get.namespace], ["team-a", "team-a"]);
      const [plainPut, plainGet] = await bothPaths(client);
      assert.deepEqual([plainPut.namespace, plainGet.namespace], [undefined, undefined]);
    } finally {
      client.close();
    }
  });

  it("sends basic auth (consul.auth) on both paths, and none without it", async () => {
    const client = createConsulClient({ address, auth: { username: "cts", password: "p:w" } }, {});
    const plain = createConsulClient({ address }, {});
    try {
      const basic = `Basic ${Buffer.from("cts:p:w").toString("base64")}`;
      const [put, get] = await bothPaths(client, "team-a");
      assert.deepEqual([put.authorization, get.authorization], [basic, basic]);
      assert.equal(client.terraformEnv.CONSUL_HTTP_AUTH, "cts:p:w");
      const [plainPut, plainGet] = await bothPaths(plain);
      assert.deepEqual([plainPut.authorization, plainGet.authorization], [undefined, undefined]);
    } finally {
      client.close();
      plain.close();
    }
  });

  it("applies consul.transport to its socket pool: keepAlive false opens a connection per call on both paths", async () => {
    const client = createConsulClient({ address, transport: { keepAlive: false } }, {});
    try {
      const [put, get] = await bothPaths(client);
      const [put2] = await bothPaths(client);
      assert.equal(new Set([put.socket, get.socket, put2.socket]).size, 3);
    } finally {
      client.close();
    }
  });

  it("follows its token file: a new token reaches the next call on both paths", async () => {
    const dir = await mkdtemp(join(tmpdir(), "cts-consul-client-"));
    const file = join(dir, "token");
    await writeFile(file, "from-file-1\n");
    let changed!: () => void;
    const told = new Promise<void>((r) => (changed = r));
    const log = createLogger({ write: (line) => (/token in .* changed/.test(line) ? changed() : undefined) });
    const client = createConsulClient({ address, token: "from-file-1" }, { tokenFile: file, log });
    try {
      const [put] = await bothPaths(client);
      assert.equal(put.token, "from-file-1");
      await writeFile(file, "from-file-2\n");
      await told;
      const [put2, get2] = await bothPaths(client);
      assert.deepEqual([put2.token, get2.token, client.terraformEnv.CONSUL_HTTP_TOKEN], ["from-file-2", "from-file-2", "from-file-2"]);
    } finally {
      client.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe("the consul package's private members", () => {
  it("are not called anywhere in src/ (only its public API is)", async () => {
    const src = fileURLToPath(new URL("../../src", import.meta.url));
    const offenders: string[] = [];
    for (const name of await readdir(src, { recursive: true })) {
      if (!/\.(ts|mts|mjs)$/.test(name)) continue;
      // Node's CommonJS loader (`Module._resolveFilename`, `_cache`, `_load`), not the consul package:
      // lazy binding roots and cdktf's deferred zip library need it.
      if (name === join("cdktf", "lazy-bindings.ts") || name === join("cdktf", "lazy-zip-library.ts")) continue;
      const text = await readFile(join(src, name), "utf8");
      text.split("\n").forEach((line, i) => {
        // papi's request internals (`_get`, `_put`, `_delete`, `_request`…) and options (`_opts`).
        if (/\._[A-Za-z]\w*/.test(line)) offenders.push(`src/${name}:${i + 1}: ${line.trim()}`);
      });
    }
    assert.deepEqual(offenders, []);
  });
});
