/**
 * The flapping writer: instance slots of one service that are registered, deregistered and whose
 * health check flips between passing and critical, as fast as asked. Each worker owns a fixed
 * slice of the slots and waits for every write before the next, so the model of what the catalog
 * holds is exact; a write Consul refuses is retried until it lands.
 */
import type { ConsulAgent } from "../../../test/support/consul.ts";
import { sleep } from "../../lib/stats.ts";

interface Slot {
  id: string;
  node: string;
  address: string;
  port: number;
  present: boolean;
  passing: boolean;
}

/** What the writer did. */
export interface FlapStats {
  changes: number;
  registers: number;
  deregisters: number;
  flips: number;
  /** Writes Consul refused or that failed on the wire (each retried). */
  writeErrors: number;
  elapsedMs: number;
  /** performance.now() when the last change was acknowledged. */
  lastChangeAt: number;
  /** Changes per one-second window, in order (the achieved rate over time). */
  perSecond: number[];
}

/** Slots of `service`, all present and passing at the start. */
export function makeSlots(service: string, n: number): Slot[] {
  return Array.from({ length: n }, (_, i) => ({ id: `${service}-${i}`, node: `flap-node-${i % 5}`, address: `10.9.${i >> 8}.${i & 255}`, port: 9000 + i, present: true, passing: true }));
}

/** The member-file lines the model says a passing-only task must show (bench MemberFile format). */
export function expectedLines(service: string, slots: Slot[]): string[] {
  return slots.filter((s) => s.present && s.passing).map((s) => `${service} ${s.id} ${s.address}:${s.port} passing`);
}

const nodeAddress = (node: string) => `10.8.0.${Number(node.split("-").pop()) + 1}`;

function register(consul: ConsulAgent, service: string, s: Slot, passing: boolean) {
  return consul.api("PUT", "/v1/catalog/register", {
    Node: s.node,
    Address: nodeAddress(s.node),
    Service: { ID: s.id, Service: service, Address: s.address, Port: s.port },
    Check: { CheckID: `chk-${s.id}`, Name: "flap", ServiceID: s.id, Status: passing ? "passing" : "critical" },
  });
}

function flip(consul: ConsulAgent, s: Slot, passing: boolean) {
  return consul.api("PUT", "/v1/catalog/register", {
    Node: s.node,
    Address: nodeAddress(s.node),
    SkipNodeUpdate: true,
    Check: { CheckID: `chk-${s.id}`, Name: "flap", ServiceID: s.id, Status: passing ? "passing" : "critical" },
  });
}

function deregister(consul: ConsulAgent, s: Slot) {
  return consul.api("PUT", "/v1/catalog/deregister", { Node: s.node, ServiceID: s.id });
}

/** Registers every slot as the model says (start state). */
export async function seed(consul: ConsulAgent, service: string, slots: Slot[]): Promise<void> {
  for (const s of slots) await register(consul, service, s, s.passing);
}

/** Flaps the slots for `seconds` at up to `rate` changes/s with `workers` writers. */
export async function flap(consul: ConsulAgent, service: string, slots: Slot[], o: { seconds: number; rate: number; workers: number; stop?: () => boolean }): Promise<FlapStats> {
  const st: FlapStats = { changes: 0, registers: 0, deregisters: 0, flips: 0, writeErrors: 0, elapsedMs: 0, lastChangeAt: 0, perSecond: [] };
  const t0 = performance.now();
  const end = t0 + o.seconds * 1000;
  let ticket = 0;
  const slice = (w: number) => slots.filter((_, i) => i % o.workers === w);
  const worker = async (mine: Slot[]) => {
    while (performance.now() < end && !o.stop?.()) {
      // Paced by a shared schedule: ticket k is due at t0 + k/rate (no burst to catch up is capped:
      // a writer that fell behind writes at once, and the achieved rate says so).
      const due = t0 + (ticket++ * 1000) / o.rate;
      const wait = due - performance.now();
      if (wait > 0) await sleep(wait);
      if (performance.now() >= end) break;
      const s = mine[Math.floor(Math.random() * mine.length)]!;
      const roll = Math.random();
      let op: () => Promise<unknown>;
      let apply: () => void;
      if (!s.present) {
        const passing = roll < 0.7;
        op = () => register(consul, service, s, passing);
        apply = () => ((s.present = true), (s.passing = passing), st.registers++);
      } else if (roll < 0.25) {
        op = () => deregister(consul, s);
        apply = () => ((s.present = false), st.deregisters++);
      } else {
        const passing = !s.passing;
        op = () => flip(consul, s, passing);
        apply = () => ((s.passing = passing), st.flips++);
      }
      for (;;) {
        try {
          await op();
          break;
        } catch {
          st.writeErrors++;
          if (st.writeErrors > 10_000) throw new Error("Consul refused more than 10,000 writes");
          await sleep(20);
        }
      }
      apply();
      st.changes++;
      const now = performance.now();
      st.lastChangeAt = now;
      const sec = Math.floor((now - t0) / 1000);
      while (st.perSecond.length <= sec) st.perSecond.push(0);
      st.perSecond[sec]!++;
    }
  };
  await Promise.all(Array.from({ length: Math.min(o.workers, slots.length) }, (_, w) => worker(slice(w))));
  st.elapsedMs = st.lastChangeAt - t0;
  return st;
}
