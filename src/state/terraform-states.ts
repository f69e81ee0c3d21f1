import { createHash } from "node:crypto";
import { join } from "node:path";
import { gunzipSync } from "node:zlib";
import type { BackendConfig } from "../config/types.ts";
import { readKept } from "../driver/safe-files.ts";

/**
 * Where a task's Terraform state is kept, looked at without running Terraform: enough to tell that
 * the state a task applied to is still there, or is gone or was replaced (a Consul restarted empty,
 * a state deleted or reset by hand). The no-op skip compares it before it skips a run.
 */
export interface TerraformStates {
  /**
   * The state's fingerprint now (its lineage and serial, or a digest of what is stored): null when
   * there is no state, undefined when it cannot be told here (another backend, Terraform Cloud,
   * a read that failed) — then the skip keys on the synthesized JSON alone, as before.
   */
  fingerprint(task: string): Promise<string | null | undefined>;
}

/**
 * Reads one Consul KV key with cts's own client: the value (as the client decodes it: a gzipped
 * state's bytes are not kept, so such a state is known by a digest), null when there is no such key.
 */
export type KvValue = (key: string) => Promise<string | null>;

/** OpenTofu's and Terraform's consul backend keep workspace `<task>`'s state at `<path>-env:<task>`. */
const WORKSPACE_SUFFIX = "-env:";

/** The consul backend's settings that point it at another Consul than cts's own (then cts cannot look). */
const OTHER_CONSUL = ["address", "datacenter", "scheme", "ca_file", "cert_file", "key_file", "http_auth"];

/**
 * The states of a config's tasks, by backend: the consul backend (CTS's default) read through cts's
 * own Consul client when it points at the same Consul; the local backend from the task's working
 * dir; any other backend (and Terraform Cloud) cannot be looked at without Terraform.
 */
export function terraformStates(backend: BackendConfig, opts: { kv?: KvValue; taskDir: (task: string) => string }): TerraformStates {
  const [type, attrs = {}] = Object.entries(backend)[0] ?? [];
  if (type === "consul" && opts.kv && typeof attrs.path === "string" && !OTHER_CONSUL.some((k) => attrs[k] !== undefined)) {
    const path = attrs.path;
    const kv = opts.kv;
    return {
      async fingerprint(task) {
        try {
          const value = await kv(`${path}${WORKSPACE_SUFFIX}${task}`);
          return value === null ? null : fingerprintOf(Buffer.from(value, "utf8"));
        } catch {
          return undefined; // unreachable or denied: cannot tell
        }
      },
    };
  }
  if (type === "local") {
    const dir = typeof attrs.workspace_dir === "string" ? attrs.workspace_dir : "terraform.tfstate.d";
    return {
      async fingerprint(task) {
        try {
          const text = readKept(join(opts.taskDir(task), dir, task, "terraform.tfstate"), task);
          return text === undefined ? null : fingerprintOf(Buffer.from(text, "utf8"));
        } catch {
          return undefined;
        }
      },
    };
  }
  return { fingerprint: async () => undefined };
}

/** `<lineage>#<serial>` of a state (plain or gzipped JSON), else a digest of the stored bytes (a chunked state's header). */
export function fingerprintOf(stored: Buffer): string {
  let body = stored;
  if (body[0] === 0x1f && body[1] === 0x8b) {
    try {
      body = gunzipSync(body);
    } catch {
      /* not gzip after all */
    }
  }
  try {
    const state = JSON.parse(body.toString("utf8")) as { lineage?: unknown; serial?: unknown };
    if (typeof state.lineage === "string" && typeof state.serial === "number") return `${state.lineage}#${state.serial}`;
  } catch {
    /* not JSON */
  }
  return `sha256:${createHash("sha256").update(stored).digest("hex").slice(0, 32)}`;
}
