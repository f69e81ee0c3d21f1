import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { EventEmitter } from "node:events";
import Consul from "consul";
import { startConsul, type ConsulAgent } from "../support/consul.ts";
import { startCountingProxy } from "../support/counting-proxy.ts";
import { waitFor } from "../support/cts.ts";

describe("smoke: the consul npm client against a real agent", () => {
  let agent: ConsulAgent;
  let client: InstanceType<typeof Consul>;

  before(async () => {
    agent = await startConsul();
    client = new Consul({ host: "127.0.0.1", port: agent.port });
  });

  after(async () => {
    client?.destroy();
    await agent?.stop();
  });

  it("a blocking query on a service's health returns when a second instance registers, and not before", { timeout: 60_000 }, async () => {
    await agent.register({ ID: "web-1", Name: "web", Port: 1 });
    // includeResponse makes the client return [response, body], so X-Consul-Index is readable.
    const first = (await client.health.service({ service: "web", ctx: Object.assign(new EventEmitter(), { includeResponse: true }) } as never)) as unknown as [
      { headers: Record<string, string> },
      unknown[],
    ];
    const index = first[0].headers["x-consul-index"];
    assert.ok(index && BigInt(index) > 0n);
    assert.equal(first[1].length, 1);

    // The blocking query goes through a proxy that says when the request reached it, so the change
    // is made only while the query waits at the agent (a query sent after a change answers at once).
    const proxy = await startCountingProxy(agent.url);
    const viaProxy = new Consul({ host: "127.0.0.1", port: Number(new URL(proxy.url).port) });
    try {
      const ctx = Object.assign(new EventEmitter(), { includeResponse: true });
      // Five minutes: an answer within this test's time can only be the change's.
      const blocking = viaProxy.health.service({ service: "web", index, wait: "5m", ctx } as never) as unknown as Promise<[{ headers: Record<string, string> }, unknown[]]>;
      await waitFor(() => proxy.inFlight("/v1/health/service/web") === 1, 60_000, "the blocking query to reach the agent");
      await agent.register({ ID: "web-2", Name: "web", Port: 2 });
      const [res, body] = await blocking;
      // Had the query returned before the change (not blocking), it would hold one instance.
      assert.equal(body.length, 2, "it returned with the change, so it blocked until then");
      assert.ok(BigInt(res.headers["x-consul-index"]!) > BigInt(index));
    } finally {
      viaProxy.destroy();
      await proxy.stop();
    }
  });
});
