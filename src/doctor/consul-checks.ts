import { randomBytes } from "node:crypto";
import type { ConsulProbe } from "./consul-probe.ts";
import type { Source } from "../consul/types.ts";
import { messageOf } from "../errors/cts-error.ts";
import { quote } from "../values/quote.ts";
import type { Condition, TaskInputs } from "../task/conditions.ts";
import { allSources } from "../task/sources.ts";
import type { Task } from "../task/task.ts";
import { fail, pass, type CheckResult } from "./check.ts";

const POLICY_HINT = "see examples/acl/cts-policy.hcl in the cts repository for a complete least-privilege policy";

/** Consul answers: the agent is up and has a leader. */
export async function checkConsulReachable(http: ConsulProbe): Promise<CheckResult> {
  try {
    const res = await http.leader();
    if (res.status === 403)
      return fail("consul", `${http.url()} refused the token (HTTP 403: ${res.body.trim().slice(0, 120)})`, "set a valid ACL token in consul.token, consul.tokenFile or CONSUL_HTTP_TOKEN");
    if (res.status === 401)
      return fail("consul", `${http.url()} asks for HTTP basic auth (HTTP 401): the credentials are missing or wrong`, "set consul.auth { username, password } (auth {} in a CTS config) or CONSUL_HTTP_AUTH=user:pass to what the proxy in front of Consul expects");
    if (res.status !== 200) return fail("consul", `${http.url()} answered HTTP ${res.status}: ${res.body.trim().slice(0, 120)}`, "check consul.address points at a Consul agent's HTTP API");
    const leader = JSON.parse(res.body) as string;
    if (!leader) return fail("consul", `${http.url()} answers but has no cluster leader`, "wait for the servers to elect a leader (or start the agent with -bootstrap-expect / -dev)");
    // The leader answers any token; an unknown token shows on a call that resolves it. That call
    // may be denied to a valid token (or ACLs may be off): only "not found" means the token is wrong.
    const self = await http.agentSelf();
    if (self.status === 403 && /not found/i.test(self.body))
      return fail("consul", `${http.url()} does not know the ACL token (${self.body.trim().slice(0, 80)})`, "set a valid ACL token in consul.token, consul.tokenFile or CONSUL_HTTP_TOKEN");
    return pass("consul", `reachable at ${http.url()} (leader ${leader})`);
  } catch (err) {
    return fail(
      "consul",
      `cannot reach ${http.url()}: ${messageOf(err)}`,
      "start a Consul agent (`consul agent -dev` to try it out) or point consul.address / CONSUL_HTTP_ADDR at one; for HTTPS set consul.tls",
    );
  }
}

function describe(source: Source): string {
  switch (source.kind) {
    case "services":
      return source.query.names ? `services ${source.query.names.map((n) => `'${n}'`).join(", ")}` : `services matching /${source.query.regexp}/`;
    case "catalog-services":
      return "the catalog's service list";
    case "consul-kv":
      return `KV '${source.query.path}'${source.query.recurse ? " (recursive)" : ""}`;
    case "nodes":
      return "the catalog's nodes";
    case "intentions":
      return source.query.destination ? `the intentions of '${source.query.destination}'` : "every service intention";
    case "config-entries":
      return `config entries of kind '${source.query.kind}'${source.query.name ? ` named '${source.query.name}'` : ""}`;
  }
}

/** The ACL rule that lets a token make the source's reads. */
function readRule(source: Source): string {
  switch (source.kind) {
    case "consul-kv":
      return `key_prefix "${source.query.path}" { policy = "read" }`;
    case "nodes":
      return 'node_prefix "" { policy = "read" }';
    case "intentions":
      return 'service_prefix "" { policy = "read" intentions = "read" }';
    case "config-entries":
      return 'service_prefix "" { policy = "read" intentions = "read" } and, for exported-services or api-gateway entries, mesh = "read"';
    default:
      return 'service_prefix "" { policy = "read" } and node_prefix "" { policy = "read" }';
  }
}

/** Every read the task needs succeeds with this token (reads exactly what a run reads). */
export async function checkTaskReads(
  task: Task<Condition, TaskInputs>,
  read: (source: Source, onSkipped?: (service: string) => void) => Promise<unknown>,
): Promise<CheckResult> {
  const sources = allSources(task);
  if (sources.length === 0) return pass(`reads:${task.name}`, "reads nothing from Consul (schedule task)");
  const skipped = new Set<string>();
  for (const source of sources) {
    try {
      await read(source, (service) => skipped.add(service));
    } catch (err) {
      const code = (err as { code?: string }).code;
      // A filter Consul refuses is the task's to fix, not the connection's: the message names the task, the filter and where.
      if (code === "TASK_FILTER_INVALID") return fail(`reads:${task.name}`, messageOf(err), "fix the filter where the message says (Consul itself answers; it refuses the expression)");
      const fix =
        code === "CONSUL_PERMISSION_DENIED"
          ? `grant the token read access: ${readRule(source)} (${POLICY_HINT})`
          : "fix the Consul connection first (see the consul check)";
      return fail(`reads:${task.name}`, `cannot read ${describe(source)}: ${messageOf(err)}`, fix);
    }
  }
  // Not a failure (runs skip them too), but the operator should know those services are left out.
  const left = skipped.size ? `; leaves out services Consul cannot serve (names with unprintable characters): ${[...skipped].map(quote).join(", ")}` : "";
  return pass(`reads:${task.name}`, `may read ${sources.map(describe).join("; ")}${left}`);
}

/** The token may write and delete Terraform state under the backend's KV path. */
export async function checkStateWrite(http: ConsulProbe, path: string): Promise<CheckResult> {
  const key = `${path.replace(/\/+$/, "")}/cts-doctor-${randomBytes(4).toString("hex")}`;
  const fix = `grant the token key_prefix "${path.replace(/\/+$/, "")}" { policy = "write" } (${POLICY_HINT})`;
  try {
    const put = await http.putKey(key, "cts doctor probe");
    if (put.status !== 200 || put.body.trim() !== "true") return fail("state", `cannot write KV '${key}' for Terraform state (HTTP ${put.status}: ${put.body.trim().slice(0, 120)})`, fix);
    const del = await http.deleteKey(key);
    if (del.status !== 200) return fail("state", `wrote but cannot delete KV '${key}' (HTTP ${del.status}); remove it by hand`, fix);
    return pass("state", `may write and delete Terraform state under KV '${path}'`);
  } catch (err) {
    return fail("state", `cannot write KV under '${path}': ${messageOf(err)}`, "fix the Consul connection first (see the consul check)");
  }
}

/** The token may create and destroy a session (the consul backend locks state with one). */
export async function checkSession(http: ConsulProbe): Promise<CheckResult> {
  const fix = `grant the token session_prefix "" { policy = "write" } (${POLICY_HINT})`;
  try {
    const created = await http.createSession("cts-doctor", "10s");
    if (created.status !== 200) return fail("session", `cannot create a session for the state lock (HTTP ${created.status}: ${created.body.trim().slice(0, 120)})`, fix);
    const id = (JSON.parse(created.body) as { ID: string }).ID;
    const destroyed = await http.destroySession(id);
    if (destroyed.status !== 200) return fail("session", `created but cannot destroy session ${id} (HTTP ${destroyed.status}); it expires in 10s`, fix);
    return pass("session", "may create and destroy the session that locks Terraform state");
  } catch (err) {
    return fail("session", `cannot create a session: ${messageOf(err)}`, "fix the Consul connection first (see the consul check)");
  }
}
