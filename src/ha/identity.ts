import { CtsError, messageOf } from "../errors/cts-error.ts";
import type { Logger } from "../log/logger.ts";
import type { HaKv } from "./kv.ts";
import type { MemberRecord } from "./member.ts";
import { sessionName } from "./session.ts";
import { durationText, type HaSettings } from "./settings.ts";

/** Whether anything answers HTTP at a URL (any status counts); the daemon passes its probe in. */
export type AnswersAt = (url: string) => Promise<boolean>;

/**
 * The identity check of high availability at start: another live instance with this id holds a
 * session in Consul (`cts-ha:<cluster>:<id>`, on any node). Such a session is not another
 * instance's when
 * - the member record of the id names the address this instance now advertises (the same
 *   instance restarting on the same host and port, its old session not expired yet), or
 * - nothing answers HTTP at the address the record names (the process that made it is dead: a
 *   crash or `kill -9` of this instance; Consul ends the session when its TTL runs out), or
 * - there is no member record to ask (a stop or crash before it was written): nothing to probe,
 *   so the start goes on with a warning.
 * Anything else that answers there is alive: refused with INSTANCE_ID_IN_USE and the fix. The
 * check is one read of the session list and of the record; when Consul cannot be asked it is
 * skipped (the election then waits for Consul anyway).
 */
export async function checkIdentity(kv: HaKv, settings: HaSettings, ownAddress: string, answersAt: AnswersAt, log: Logger): Promise<void> {
  let sessions: Array<{ id: string; node: string }>;
  try {
    sessions = await kv.sessionsNamed(sessionName(settings));
  } catch (err) {
    log.debug(`ha: identity check skipped: ${messageOf(err)}`);
    return;
  }
  if (sessions.length === 0) return;
  const nodes = [...new Set(sessions.map((s) => s.node).filter(Boolean))].join(", ") || "?";
  let record: MemberRecord | undefined;
  try {
    const read = await kv.get(`${settings.membersPrefix}${settings.id}`);
    record = read.data?.value ? (JSON.parse(read.data.value) as MemberRecord) : undefined;
  } catch {
    record = undefined; // unreadable: as if absent
  }
  const address = typeof record?.address === "string" ? record.address : "";
  const ttl = durationText(settings.sessionTtlMs);
  if (!address) {
    log.warn(`ha: a session of id '${settings.id}' is live in Consul (node ${nodes}) but no member record says where its instance answers; starting (if another instance runs with this id, stop it or give one a unique id)`);
    return;
  }
  if (sameAddress(address, ownAddress)) {
    log.info(`ha: the live session of id '${settings.id}' (node ${nodes}) is this instance's previous run (same address ${address}); it ends within the session TTL (${ttl})`);
    return;
  }
  if (!(await answersAt(address))) {
    log.info(`ha: the live session of id '${settings.id}' (node ${nodes}) belongs to a process that no longer answers at ${address} (this instance restarting, or a dead one); it ends within the session TTL (${ttl})`);
    return;
  }
  throw new CtsError(
    "INSTANCE_ID_IN_USE",
    "usage",
    `another cts instance with id '${settings.id}' holds a live session in Consul (cluster '${settings.clusterName}', node ${nodes}) and answers at ${address}: two instances with one id take each other's place in the election and each other's tasks. Set a unique id in the config (cts.config.ts \`id\`, CTS HCL \`id\`), or stop the other instance.`,
  );
}

/** Two advertised URLs of one listener (scheme, host and port; a trailing slash aside). */
function sameAddress(a: string, b: string): boolean {
  const norm = (u: string) => {
    try {
      const url = new URL(u);
      return `${url.protocol}//${url.hostname}:${url.port || (url.protocol === "https:" ? "443" : "80")}`;
    } catch {
      return u.replace(/\/+$/, "");
    }
  };
  return b !== "" && norm(a) === norm(b);
}
