import { request } from "node:http";
import { waitUntil } from "./processes.ts";

/** What a batch of requests through the load balancer saw. */
export interface TrafficSample {
  /** Answers per instance id (non-200 answers are counted under `HTTP <status>`). */
  byId: Record<string, number>;
  /** The ids that answered, sorted. */
  ids: string[];
  requests: number;
}

// A new connection per request: after a reload, old nginx workers keep serving the connections
// they hold, so a kept-alive client would see the previous pool for a while.
function once(url: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = request(url, { agent: false, headers: { connection: "close" }, timeout: 2_000 }, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (d: string) => (body += d));
      res.on("end", () => resolve(res.statusCode === 200 ? body.trim() : `HTTP ${res.statusCode}`));
      res.on("error", reject);
    });
    req.on("timeout", () => req.destroy(new Error(`no answer from ${url} within 2 s`)));
    req.on("error", reject);
    req.end();
  });
}

/** Sends `requests` sequential requests to `url` and counts who answered. */
export async function sample(url: string, requests = 12): Promise<TrafficSample> {
  const byId: Record<string, number> = {};
  for (let i = 0; i < requests; i++) {
    const who = await once(url);
    byId[who] = (byId[who] ?? 0) + 1;
  }
  return { byId, ids: Object.keys(byId).sort(), requests };
}

/** One line for humans: `web-1 ×4  web-3 ×4  web-4 ×4`. */
export function describeSample(s: TrafficSample): string {
  return s.ids.map((id) => `${id} ×${s.byId[id]}`).join("  ") || "(no answers)";
}

/**
 * Waits until traffic through the load balancer reaches exactly `expected` (each of them, and
 * nobody else) in three batches in a row, and returns the last. Round robin over n servers answers
 * from each within n requests (4·n per batch); the streak covers nginx's reload, during which the
 * old worker may still take a connection now and then with the previous pool.
 */
export async function waitForPool(url: string, expected: string[], timeoutMs = 60_000): Promise<TrafficSample> {
  const want = [...expected].sort();
  let last: TrafficSample | undefined;
  let streak = 0;
  try {
    return await waitUntil(
      `traffic through ${url} to reach exactly [${want.join(", ")}]`,
      async () => {
        last = await sample(url, Math.max(4, 4 * want.length));
        const exact = last.ids.length === want.length && last.ids.every((id, i) => id === want[i]);
        streak = exact ? streak + 1 : 0;
        return streak >= 3 ? last : undefined;
      },
      timeoutMs,
      250,
    );
  } catch (e) {
    throw new Error(`${(e as Error).message}; last answers: ${last ? describeSample(last) : "none"}`);
  }
}
