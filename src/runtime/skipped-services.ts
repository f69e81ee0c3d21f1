import type { CtsError } from "../errors/cts-error.ts";
import type { Logger } from "../log/logger.ts";
import type { Metrics } from "../metrics/metrics.ts";
import { quote } from "../values/quote.ts";

/**
 * Where a task's reads tell that a service Consul cannot serve was left out of its input (a name
 * its HTTP API refuses: see `refusedServiceName`). The task runs with the other services.
 */
export interface SkippedServices {
  /** Service `service` was left out of task `task`'s input: warned and counted once per task and name. */
  report(task: string, service: string, error: CtsError): void;
}

/** The warning for a skipped service; the name is quoted (`quote`), so a newline in it cannot forge a log line. */
export function skippedServiceMessage(task: string, service: string): string {
  return (
    `task '${task}': skipped service ${quote(service)}: Consul cannot serve its health (HTTP 400: ` +
    `its HTTP API refuses URL paths with characters that are not printable); the task runs with the other services. ` +
    `Rename the service in Consul, or set disable_http_unprintable_char_filter = true on the Consul agents.`
  );
}

/**
 * Warns once per task and service name, not per read or poll: a daemon re-reads on every change,
 * and `once` retries a failed run. The names kept are bounded by the catalog's refused names.
 */
export function skippedServices(log: Logger, metrics: Metrics): SkippedServices {
  const told = new Map<string, Set<string>>();
  return {
    report(task, service, error) {
      let names = told.get(task);
      if (!names) told.set(task, (names = new Set()));
      if (names.has(service)) return;
      names.add(service);
      metrics.serviceSkipped(task);
      log.warn(skippedServiceMessage(task, service), { task, code: error.code });
    },
  };
}
