import { request as httpRequest } from "node:http";
import { request as httpsRequest } from "node:https";

/** Who answers on the API's port: the cts instance of that id, another program, or nothing that answers HTTP. */
export type Listener = { kind: "cts"; id?: string } | { kind: "other" };

/**
 * Asks what listens on the API's address and port (`GET /v1/status`, which every cts answers with
 * its `task_summary` and, since it names itself, `instance.id`). The certificate is not verified:
 * the answer only says who holds the port, it is not trusted with anything.
 */
export function identifyListener(address: string, port: number, https: boolean, timeoutMs = 3_000): Promise<Listener> {
  const host = address === "0.0.0.0" || address === "" ? "127.0.0.1" : address === "::" ? "::1" : address.replace(/^\[|\]$/g, "");
  return new Promise((resolve) => {
    const req = (https ? httpsRequest : httpRequest)(
      { host, port, path: "/v1/status", method: "GET", timeout: timeoutMs, rejectUnauthorized: false, headers: { accept: "application/json" } },
      (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (d: string) => text.length < 65_536 && (text += d));
        res.on("end", () => {
          try {
            const body = JSON.parse(text) as { task_summary?: unknown; instance?: { id?: unknown } };
            if (!body || typeof body.task_summary !== "object") return resolve({ kind: "other" });
            resolve(typeof body.instance?.id === "string" ? { kind: "cts", id: body.instance.id } : { kind: "cts" });
          } catch {
            resolve({ kind: "other" });
          }
        });
        res.on("error", () => resolve({ kind: "other" }));
      },
    );
    req.on("timeout", () => req.destroy());
    req.on("error", () => resolve({ kind: "other" }));
    req.end();
  });
}
