import type { Clock } from "../time/clock.ts";
import type { Logger } from "../log/logger.ts";
import type { HaControl } from "../runtime/interfaces.ts";
import type { KvAccess } from "../state/kv-state.ts";
import type { StoredState } from "../state/stored-state.ts";
import type { ClusterStatus } from "./cluster.ts";
import type { HaKv } from "./kv.ts";
import type { MemberReporter } from "./member.ts";
import type { StateMirror } from "./mirror.ts";
import type { LeaderSession, SessionLoss } from "./session.ts";
import type { HaSettings } from "./settings.ts";
import type { StateWriter } from "./writer.ts";

/** What the member lends its mode: the parts it owns (src/ha/cluster-member.ts). */
export interface MemberParts {
  readonly settings: HaSettings;
  readonly controller: HaControl;
  /** The `ha` logger. */
  readonly log: Logger;
  readonly kv: HaKv;
  /** The one fenced state writer (the task state's writes go through it too). */
  readonly writer: StateWriter;
  /** Every wait and timer of the cluster (a fake one in unit tests). */
  readonly clock: Clock;
  /** Keeps the controller equal to the stored state while the mode lets it (`mirrorApplies`). */
  readonly mirror: StateMirror;
  /** The compatibility check and this member's record under `members/`. */
  readonly record: MemberReporter;
  /** How long runs that are stopped may take to end. */
  readonly stopGraceMs: number;
  /** Aborted when the member stops: every wait of the mode ends with it. */
  readonly stopping: AbortSignal;
  /** How clients reach this member. */
  address(): string;
  /** The member's session while it lives (undefined between sessions and after the stop). */
  session(): LeaderSession | undefined;
  /** Reads the stored state once (the compatibility check keeps it too). */
  readState(): Promise<StoredState>;
}

/** A task-changing API call, as the change hooks see it. */
export interface ApiChange {
  task?: string;
  /** Approve and reject word their redirect with the command to run on the owner. */
  action?: "approve" | "reject" | "drift";
}

/** What a stopping member needs from its mode (the answer of `leave`). */
export interface Leaving {
  /** This member ran tasks: its runs stop and its pending state writes are stored before the session ends. */
  ranTasks: boolean;
  /** The steps a stop without Consul skips by leaving the session to expire, in the stop's words. */
  offlineSkips: string[];
  /** Before the session is destroyed (Consul answers): a leader releases its lock first, which has no lock delay. */
  beforeDestroy?: (session: LeaderSession) => Promise<void>;
  /** The stop's last word, once everything is done. */
  done?: (offline: boolean) => void;
}

/**
 * How a member takes part in its cluster (`highAvailability.cluster.mode`): leader election
 * (src/ha/leader-election.ts) or shared assignment (src/ha/shared-assignment.ts). The member holds
 * the session, mirror, member record, writer and stop; its mode says what a session is used for,
 * which writes it may make (KvAccess) and what the API's task changes need.
 */
export interface ClusterMode extends KvAccess {
  /** Logs the join and starts what the mode follows in Consul (before the first session). */
  join(): void;
  /** A new session: false when it cannot be used (the member destroys it and tries again later). */
  admit?(session: LeaderSession): Promise<boolean>;
  /** Uses `session` until `ended` aborts (the session is lost, or the member stops). */
  hold(session: LeaderSession, ended: AbortSignal): Promise<void>;
  /** The session is gone: stop what it fenced. The next session waits until this resolves. */
  sessionLost(loss: SessionLoss): Promise<void> | void;
  /** A failed join (creating a session, taking part with it), with the count of failures in a row. */
  joinFailed(err: unknown, failures: number): void;
  /** Whether the mirror may apply a stored state now. */
  mirrorApplies(): boolean;
  /** The mirror read a new stored state (the controller has it already). */
  stateRead?(state: StoredState): void;
  /** The leader the compatibility check compares this member's config with (another instance). */
  otherLeader(): string | undefined;
  /** Refuses a task-changing API call this member must not make (CTS's redirect). */
  beforeChange(change: ApiChange): void;
  /** After a task-changing API call: waits (up to 5 s) until the change is stored in Consul. */
  flushForApi(): Promise<void>;
  /** `GET /v1/status/cluster`, read from Consul (any member answers the same). */
  clusterStatus(): Promise<ClusterStatus>;
  /** Pins a task to a member (null removes the pin): shared assignment only. */
  pin?(task: string, member: string | null): Promise<void>;
  /** The member stops: the mode stops its own watches and timers and says what the stop must do. */
  leave(): Promise<Leaving>;
}
