import type { IncomingMessage } from "node:http";
import { request as httpRequest, type Agent as HttpAgent } from "node:http";
import { request as httpsRequest, type Agent as HttpsAgent } from "node:https";

/** Where a raw GET goes: the transport's socket pool, TLS options and client-wide headers. */
export interface RawGetTarget {
  /** `scheme://host:port/v1`. */
  baseUrl: string;
  agent: HttpAgent | HttpsAgent;
  tls: Record<string, unknown>;
  /** Token and namespace headers. */
  headers: Record<string, string>;
}

/**
 * One GET answered with its raw body, for the watch's health queries: thousands of them wait at
 * once, so each holds one request, one socket timeout and three listeners (the package client
 * adds a request pipeline, option copies and a second timer per call), and the body can be
 * compared before it is parsed. Errors are shaped as the package's (`response.statusCode`,
 * `isTimeout`), so the transport's error mapping reads them the same way.
 */
export function rawGet(target: RawGetTarget, path: string, timeoutMs: number, cancel: { on(event: "cancel", fn: () => void): unknown }): Promise<[IncomingMessage, Buffer]> {
  return new Promise((resolve, reject) => {
    // A method and inline callbacks only: run from the sources (tsx, esbuild's keepNames), every
    // closure bound to a name gets its own `name` property, ~250 bytes per waiting query each.
    const state = {
      done: false,
      finish(err: unknown, value?: [IncomingMessage, Buffer]): void {
        if (state.done) return;
        state.done = true;
        if (err) reject(err);
        else resolve(value!);
      },
    };
    const request = target.baseUrl.startsWith("https:") ? httpsRequest : httpRequest;
    // `on`, not `once`, and the timeout as an option: each `once` costs a wrapper, a bound
    // function and a state object per request, and `finish` runs only once anyway.
    const req = request(`${target.baseUrl}${path}`, { agent: target.agent, headers: target.headers, timeout: timeoutMs, ...target.tls });
    req.on("response", (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on("data", (chunk: Buffer) => {
        chunks.push(chunk);
        size += chunk.length;
      });
      res.on("error", (err) => state.finish(err));
      // A connection closed mid-answer (Consul stopped): after "end" this is a no-op.
      res.on("close", () => state.finish(Object.assign(new Error("socket hang up"), { code: "ECONNRESET" })));
      res.on("end", () => {
        const body = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size);
        const status = res.statusCode ?? 0;
        if (status >= 200 && status < 300) return state.finish(undefined, [res, body]);
        state.finish(Object.assign(new Error(`Consul answered HTTP ${status}`), { response: { statusCode: status, body, headers: res.headers } }));
      });
    });
    // One socket inactivity limit: a blocking query sends nothing until Consul answers, so for
    // it this is the whole exchange's limit.
    req.on("timeout", () => req.destroy(Object.assign(new Error(`request timed out (${timeoutMs}ms)`), { isTimeout: true })));
    req.on("error", (err) => state.finish(err));
    // `cancel` is the call's own emitter (garbage with the call), so its listener is never removed.
    cancel.on("cancel", () => req.destroy(Object.assign(new Error("request aborted"), { isAbort: true })));
    req.end();
  });
}
