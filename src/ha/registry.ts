import type { HighAvailability } from "./high-availability.ts";

const byController = new WeakMap<object, HighAvailability>();

/** Links a runtime's controller to its high availability, so the API (started by a daemon hook) finds it. */
export function attachHighAvailability(controller: object, ha: HighAvailability): void {
  byController.set(controller, ha);
}

/** The high availability of a runtime's controller, if it runs with one. */
export function highAvailabilityOf(controller: object): HighAvailability | undefined {
  return byController.get(controller);
}
