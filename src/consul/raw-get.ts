import type { IncomingMessage } from "node:http";
import { request as httpRequest, type Agent as HttpAgent } from "node:http";
import { request as httpsRequest, type Agent as HttpsAgent } from "node:https";

/**
 * Where a raw GET goes: one per connection and namespace, built once and shared by every query
 * (the transport caches it), so a waiting query holds no copy of it.
 */
export interface RawGetTarget {
  secure: boolean;
  /** Host name or IP (IPv6 without brackets). */
  host: string;
  port: number;
  agent: HttpAgent | HttpsAgent;
  tls: Record<string, unknown>;
  /** Token and namespace headers. */
  headers: Record<string, string>;
}

/**
 * One GET answered with its raw body, for the watch's health queries: thousands of them wait at
 * once, so each holds one request, one socket timeout, one abort listener and four event
 * listeners, and the body can be compared before it is parsed. Errors are shaped as the
 * package's (`response.statusCode`, `isTimeout`, `isAbort`), so the transport's error mapping
 * reads them the same way. `path` is absolute (`/v1/...?query`).
 */
export function rawGet(target: RawGetTarget, path: string, timeoutMs: number, signal?: AbortSignal): Promise<[IncomingMessage, Buffer]> {
  return new Promise((resolve, reject) => {
    // Host, port and path as options, not a URL: node keeps the request's options for the life
    // of a keep-alive socket, and a parsed URL would add a dozen fields to them.
    const request = target.secure ? httpsRequest : httpRequest;
    const req = request({ host: target.host, port: target.port, path, agent: target.agent, headers: target.headers, timeout: timeoutMs, ...target.tls });
    // One object is the settle-once state and the abort listener (`handleEvent`): run from the
    // sources (tsx, esbuild's keepNames), every closure bound to a name gets its own `name`
    // property, ~250 bytes per waiting query each.
    const state = {
      done: false,
      finish(err: unknown, value?: [IncomingMessage, Buffer]): void {
        if (state.done) return;
        state.done = true;
        signal?.removeEventListener("abort", state);
        if (err) reject(err);
        else resolve(value!);
      },
      handleEvent(): void {
        req.destroy(Object.assign(new Error("request aborted"), { isAbort: true }));
      },
    };
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
    // it this is the whole exchange's limit. `on`, not `once`: each `once` costs a wrapper, a
    // bound function and a state object per request, and `finish` runs only once anyway.
    req.on("timeout", () => req.destroy(Object.assign(new Error(`request timed out (${timeoutMs}ms)`), { isTimeout: true })));
    req.on("error", (err) => state.finish(err));
    if (signal) {
      if (signal.aborted) state.handleEvent();
      else signal.addEventListener("abort", state, { once: true });
    }
    req.end();
  });
}
