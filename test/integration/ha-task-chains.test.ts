import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { startConsul, type ConsulAgent } from "../support/consul.ts";
import { PUBLIC_API, tempDir, waitFor } from "../support/cts.ts";
import { freePort } from "../support/ports.ts";
import { firstToPrint, startCtsProcess, type CtsProcess } from "../support/cts-process.ts";
import { tools } from "../support/tools.ts";

const CHAIN_TASKS = fileURLToPath(new URL("../fixtures/chain-tasks.ts", import.meta.url));
const CLUSTER = "ha-chains";
const read = (p: string) => readFile(p, "utf8").catch(() => "");
const sha256 = (s: string) => createHash("sha256").update(s).digest("hex");

/** A high-availability instance's config: `reader` after `pool`, both writing into the shared folder `out`. */
async function haConfig(dir: string, o: { consulAddress: string; id: string; port: number; out: string }): Promise<string> {
  const t = tools();
  await mkdir(dir, { recursive: true });
  const file = join(dir, "cts.config.ts");
  await writeFile(
    file,
    `import { defineConfig } from ${JSON.stringify(PUBLIC_API)};
import { PoolFile, PoolReader } from ${JSON.stringify(CHAIN_TASKS)};
export default defineConfig({
  id: ${JSON.stringify(o.id)},
  consul: { address: ${JSON.stringify(o.consulAddress)} },
  driver: { terraform: { binary: ${JSON.stringify(t.tofu)}, cliConfigFile: ${JSON.stringify(t.cliConfig)}, workingDir: ${JSON.stringify(join(dir, "sync-tasks"))} } },
  api: { port: ${o.port} },
  highAvailability: { cluster: { name: ${JSON.stringify(CLUSTER)}, storage: { sessionTtl: "3s" } } },
  tasks: [new PoolReader("reader", ${JSON.stringify(join(o.out, "seen.txt"))}, "pool"), new PoolFile("pool", ${JSON.stringify(join(o.out, "members.txt"))})],
});
`,
  );
  return file;
}

/**
 * CTS #329 under high availability, with real `cts watch` processes (task classes declared to the
 * daemon's main thread, synthesized in its worker): the leader runs the chain in order; after it is
 * killed, the new leader runs it with the upstream outputs kept in Consul KV.
 */
describe("task chains under high availability (real Consul, real OpenTofu, two cts processes)", () => {
  let consul: ConsulAgent;
  let tmp: { dir: string; cleanup(): Promise<void> };
  const procs: CtsProcess[] = [];
  let out: string;
  let leader: CtsProcess;
  let follower: CtsProcess;

  before(async () => {
    consul = await startConsul({ extraConfig: 'session_ttl_min = "1s"' });
    tmp = await tempDir("cts-ha-chains-");
    out = join(tmp.dir, "out");
    await mkdir(out);
    await consul.register({ Name: "web", ID: "web-1", Address: "10.0.0.1", Port: 80 });
    for (const id of ["cts-a", "cts-b"]) {
      const port = await freePort();
      procs.push(startCtsProcess(await haConfig(join(tmp.dir, id), { consulAddress: consul.address, id, port, out }), { name: id }));
    }
    leader = (await firstToPrint(procs, /ha: acquired leadership lock: id=/, 90_000)).p;
    follower = procs.find((p) => p !== leader)!;
  });
  after(async () => {
    await Promise.all(procs.map((p) => p.terminate(15_000)));
    await consul?.stop();
    await tmp?.cleanup();
  });

  it("the leader runs the chain: the downstream task reads the upstream task's output", async () => {
    await waitFor(async () => (await read(join(out, "seen.txt"))) === `${sha256("web-1\n")} 1 no-secret\n`, 120_000, "reader with pool's first hash");
  });

  it("after a failover the new leader runs the chain with the outputs kept in Consul", async () => {
    await leader.kill9();
    await follower.waitForLine(/ha: acquired leadership lock: id=/, 90_000);
    await consul.register({ Name: "web", ID: "web-2", Address: "10.0.0.2", Port: 80 });
    await waitFor(async () => (await read(join(out, "seen.txt"))) === `${sha256("web-1\nweb-2\n")} 2 no-secret\n`, 120_000, "reader with pool's new hash, on the new leader");
    assert.equal(await read(join(out, "members.txt")), "web-1\nweb-2\n");
  });
});
