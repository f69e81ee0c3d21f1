import { request } from "node:http";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { gunzipSync } from "node:zlib";

/** An API answer: status, headers, parsed JSON body. */
export interface HttpAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: any;
  text: string;
}

/**
 * A raw HTTP call (node:http, not fetch): the path is sent exactly as given, so `/v1/tasks/../x`
 * reaches the server un-normalized, and bodies may be anything.
 */
export function http(baseUrl: string, method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<HttpAnswer> {
  const url = new URL(baseUrl);
  const payload = body === undefined ? undefined : typeof body === "string" || Buffer.isBuffer(body) ? body : JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = request({ host: url.hostname, port: url.port, method, path, headers: { ...(payload !== undefined ? { "content-type": "application/json" } : {}), ...headers } }, (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (d: string) => (text += d));
      res.on("end", () => {
        let parsed: unknown;
        try {
          parsed = text ? JSON.parse(text) : undefined;
        } catch {
          parsed = undefined;
        }
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: parsed, text });
      });
    });
    req.on("error", reject);
    req.end(payload);
  });
}

/**
 * Writes a CTS-style module into `<dir>/modules/echo`: it writes "<greeting> <ids>" to `path`, and
 * with `delay` > 0 first runs a terraform_data whose local-exec sleeps that long (a slow apply).
 */
export async function writeEchoModule(dir: string): Promise<string> {
  const mod = join(dir, "modules", "echo");
  await mkdir(mod, { recursive: true });
  await writeFile(
    join(mod, "main.tf"),
    `terraform {
  required_providers {
    local = { source = "hashicorp/local" }
  }
}
variable "services" { type = any }
variable "path" { type = string }
variable "greeting" {
  type    = string
  default = "hello"
}
variable "delay" {
  type    = number
  default = 0
}
resource "terraform_data" "slow" {
  count            = var.delay > 0 ? 1 : 0
  triggers_replace = [var.greeting, sort(keys(var.services))]
  provisioner "local-exec" {
    command = "sleep \${var.delay}"
  }
}
resource "local_file" "out" {
  filename   = var.path
  content    = "\${var.greeting} \${join(",", sort([for s in values(var.services) : s.id]))}\\n"
  depends_on = [terraform_data.slow]
}
`,
  );
  return mod;
}

/** A task's Terraform state from CTS's default Consul backend (`consul-terraform-sync/terraform-env:<task>`), or undefined. */
export async function consulState(consulUrl: string, task: string): Promise<{ resources: unknown[] } | undefined> {
  const res = await fetch(`${consulUrl}/v1/kv/consul-terraform-sync/terraform-env:${task}?raw`);
  if (res.status === 404) return undefined;
  const bytes = Buffer.from(await res.arrayBuffer());
  const text = bytes[0] === 0x1f && bytes[1] === 0x8b ? gunzipSync(bytes).toString("utf8") : bytes.toString("utf8");
  return JSON.parse(text) as { resources: unknown[] };
}
