import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { EventEmitter } from "node:events";
import Consul from "consul";
import { startConsul, type ConsulAgent } from "../support/consul.ts";

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

  it("a blocking query on a service's health returns when a second instance registers, and not before", async () => {
    await agent.register({ ID: "web-1", Name: "web", Port: 1 });
    // includeResponse makes the client return [response, body], so X-Consul-Index is readable.
    const first = (await client.health.service({ service: "web", ctx: Object.assign(new EventEmitter(), { includeResponse: true }) } as never)) as unknown as [
      { headers: Record<string, string> },
      unknown[],
    ];
    const index = first[0].headers["x-consul-index"];
    assert.ok(index && BigInt(index) > 0n);
    assert.equal(first[1].length, 1);

    const ctx = Object.assign(new EventEmitter(), { includeResponse: true });
    let answered = false;
    const blocking = client.health
      .service({ service: "web", index, wait: "10s", ctx } as never)
      .then((r) => {
        answered = true;
        return r as unknown as [{ headers: Record<string, string> }, unknown[]];
      });
    await new Promise((r) => setTimeout(r, 500));
    assert.equal(answered, false, "the query blocks while nothing changes");

    const registered = Date.now();
    await agent.register({ ID: "web-2", Name: "web", Port: 2 });
    const [res, body] = await blocking;
    assert.ok(Date.now() - registered < 2_000, "it returns promptly after the change");
    assert.equal(body.length, 2);
    assert.ok(BigInt(res.headers["x-consul-index"]!) > BigInt(index));
  });
});
