import type { Logger } from "../log/logger.ts";
import type { TaskControl } from "../runtime/interfaces.ts";

/** The controller operations the API uses: the runtime's TaskControl (a fake can stand in for unit tests). */
export type ApiController = TaskControl;

/** Whether Consul answers, as the API and the dashboard read it (the daemon's reachability tracker). */
export interface ConsulState {
  reachable: boolean;
  lostSince?: string | undefined;
  reason?: string | undefined;
  /** Told each change (the dashboard's live updates); returns the removal. */
  onChange?(listener: (reachable: boolean) => void): () => void;
}

/** What the API server needs. */
export interface ApiDeps {
  controller: ApiController;
  log: Logger;
  /** Why the daemon is unhealthy (Consul unreachable…), or undefined when healthy. */
  health?: () => Promise<string | undefined>;
  /** Largest accepted request body in bytes (default 1 MiB). */
  bodyLimitBytes?: number;
  /** `GET /v1/status/cluster`'s body (high availability); without it the route answers 405. */
  cluster?: () => Promise<Record<string, unknown>>;
  /** Called before every task-changing call; throws to refuse it (an HA follower's redirect error). */
  beforeChange?: (change: { method: string; task?: string; /** What the call does to the task (approve and reject word their redirect with the command). */ action?: "approve" | "reject" | "drift" }) => void | Promise<void>;
  /** Shared cluster mode: `PATCH {"pin": "<member>"}` pins a task to a member (null unpins). */
  pin?: (task: string, member: string | null) => Promise<void>;
  /** Awaited after every task-changing call, before answering (HA: the change is stored in Consul). */
  afterChange?: () => Promise<void>;
  /** Whether Consul answers (the daemon's one client): `GET /v1/status` says so beside CTS's summary. */
  consul?: ConsulState;
  /** The daemon's driver: with "terraformCloud" a task may carry CTS's terraform_cloud_workspace and terraform_version (default "terraform"). */
  driver?: "terraform" | "terraformCloud";
  /** This instance's id: `GET /v1/status` names it (`instance.id`, beyond CTS) so `cts doctor` knows its own daemon on the port. */
  instanceId?: string;
  /** `GET /metrics`: the Prometheus text (without it the route answers 404). */
  metrics?: () => Promise<{ contentType: string; body: string }>;
}
