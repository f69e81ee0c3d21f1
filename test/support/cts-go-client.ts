import { request } from "node:http";

/**
 * Requests exactly as CTS v0.9.0's Go client (`api/client.go`, `api/task_lifecycle_client.go`)
 * sends them, byte for byte where it matters: Go's default headers, no Content-Type on its PATCH
 * (`http.NewRequest` with a reader sets none), `{"Enabled":…}` (a Go struct without JSON tags),
 * and task variables written by cty's JSON encoder (HTML-escaped, as Go's json.Marshal does).
 * Answers are read as that client reads them, so tests see what a CTS user would see.
 */

/** A raw answer plus what CTS's client makes of it. */
export interface GoAnswer {
  status: number;
  contentType: string | undefined;
  text: string;
  body: any;
  /** CTS's client error text ("request returned 400 status code with error: …"), or undefined on success. */
  goError: string | undefined;
}

/** A value as cty's JSON encoder writes it: Go's json.Marshal, which escapes <, > and & (and U+2028/9). */
export function ctyJson(v: unknown): string {
  return JSON.stringify(v)
    .replace(/</g, "\\u003c")
    .replace(/>/g, "\\u003e")
    .replace(/&/g, "\\u0026")
    .replace(/\u2028/g, "\\u2028")
    .replace(/\u2029/g, "\\u2029");
}

/** `variables` as CTS's CLI sends them: every value encoded with ctyJson, so every value is a string. */
export function ctsVariables(values: Record<string, unknown>): Record<string, string> {
  return Object.fromEntries(Object.entries(values).map(([k, v]) => [k, ctyJson(v)]));
}

function send(base: string, method: string, path: string, body: string | undefined, headers: Record<string, string>): Promise<GoAnswer> {
  const url = new URL(base);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: url.hostname,
        port: url.port,
        method,
        path,
        // Go's net/http default headers (Host and, with a body, Content-Length are added by node).
        headers: { "User-Agent": "Go-http-client/1.1", "Accept-Encoding": "gzip", ...headers },
      },
      (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (d: string) => (text += d));
        res.on("end", () => {
          const contentType = res.headers["content-type"];
          let parsed: any;
          try {
            parsed = text ? JSON.parse(text) : undefined;
          } catch {
            parsed = undefined;
          }
          const status = res.statusCode ?? 0;
          resolve({ status, contentType, text, body: parsed, goError: status >= 400 ? goErrorText(status, contentType, parsed, text) : undefined });
        });
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

/**
 * What CTS's generated client reports for an error answer: the message only when the answer is
 * `application/json` (exactly) with the error shape; otherwise the raw body.
 */
function goErrorText(status: number, contentType: string | undefined, body: any, text: string): string {
  const msg = contentType === "application/json" && typeof body?.error?.message === "string" ? body.error.message : undefined;
  return msg !== undefined ? `request returned ${status} status code with error: ${msg}` : `request returned ${status} status code: ${text}`;
}

/** CTS's Go API client, as its CLI uses it. */
export function ctsGoClient(base: string) {
  const query = (q: Record<string, string | undefined>) => {
    const p = new URLSearchParams();
    for (const [k, v] of Object.entries(q)) if (v) p.set(k, v);
    return p.size ? `?${p}` : "";
  };
  return {
    /** `Task().Update`: PATCH with `{"Enabled":bool}` and no Content-Type (task enable / disable). */
    update: (name: string, enabled: boolean, run?: "now" | "inspect") => send(base, "PATCH", `/v1/tasks/${name}${query({ run })}`, JSON.stringify({ Enabled: enabled }), {}),
    /** `TaskLifecycleClient.CreateTask`: POST `{"task":{…}}` as application/json (task create). */
    createTask: (task: Record<string, unknown>, run?: "now" | "inspect") =>
      send(base, "POST", `/v1/tasks${query({ run })}`, JSON.stringify({ task }), { "Content-Type": "application/json" }),
    /** `TaskLifecycleClient.DeleteTask` (task delete). */
    deleteTask: (name: string) => send(base, "DELETE", `/v1/tasks/${name}`, undefined, {}),
    /** `TaskLifecycleClient.GetTask`. */
    getTask: (name: string) => send(base, "GET", `/v1/tasks/${name}`, undefined, {}),
    /** `Status().Task(name, {include, status})`. */
    taskStatus: (name = "", q: { include?: "events"; status?: string } = {}) =>
      send(base, "GET", `/v1/status/tasks${name ? `/${name}` : ""}${query(q)}`, undefined, {}),
    /** Any request with Go's default headers (for bodies a hand-written Go client would send). */
    raw: (method: string, path: string, body?: string, headers: Record<string, string> = {}) => send(base, method, path, body, headers),
    /** `Status().Overall()`. */
    overall: () => send(base, "GET", "/v1/status", undefined, {}),
  };
}
