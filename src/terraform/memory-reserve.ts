import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

/** The reserve on a VM whose host takes back free memory: a `tofu apply` touches about 40 MB of new memory. */
export const DEFAULT_MEMORY_RESERVE_MB = 64;

/**
 * Memory kept in use for Terraform's next start, on a virtual machine that hands its free memory
 * back to the host (a virtio balloon with free page reporting). There, memory a new process
 * touches for the first time after a quiet spell has to be faulted back in by the host: measured
 * on the 2-core benchmark VM, 2.9 s for 400 MB after a few quiet minutes, and about 200 ms on a
 * `tofu apply` (2.3–2.6× its back-to-back time). Pages freed a moment ago are still backed, and the
 * kernel hands them out first. So the reserve is a small process (`dd` with a buffer of the
 * reserve's size, blocked writing into a pipe nobody reads) that holds the memory while nothing
 * runs; when an operation starts it is killed, its pages are free and backed, and Terraform's
 * process gets them. Once no operation has run for a moment it is started again (cheaply: the
 * pages Terraform just gave back are still backed).
 */
export class MemoryReserve {
  private child: ChildProcess | undefined;
  private timer: NodeJS.Timeout | undefined;
  private running = 0;
  private wanted = false;
  private closed = false;
  private broken = false;

  constructor(
    /** Megabytes held. */
    private readonly mb: number,
    private readonly o: {
      /** The driver's own notices (the reserve cannot be held). */
      notice: (line: string) => void;
      /** Quiet time after the last operation before the memory is taken again. */
      settleMs?: number;
      /** The program that holds it (tests); default `dd`. */
      command?: string;
    },
  ) {}

  /** The process holding the reserve now, if any. */
  get pid(): number | undefined {
    return this.child?.pid;
  }

  /** Quiet spells are kept fast (a task runs without a buffer period) or not: held, or let go. */
  keep(on: boolean): void {
    this.wanted = on;
    if (on) this.schedule();
    else void this.drop();
  }

  /** An operation starts: the memory goes to its Terraform process (resolves once it is free). */
  async starting(): Promise<void> {
    this.running++;
    this.clearTimer();
    await this.drop();
  }

  /** An operation ended: when none runs any more, the memory is taken again after a short settle. */
  ended(): void {
    this.running = Math.max(0, this.running - 1);
    this.schedule();
  }

  async close(): Promise<void> {
    this.closed = true;
    this.clearTimer();
    await this.drop();
  }

  private schedule(): void {
    if (!this.wanted || this.closed || this.broken || this.running > 0 || this.child) return;
    this.clearTimer();
    this.timer = setTimeout(() => this.take(), this.o.settleMs ?? 1_000);
    this.timer.unref();
  }

  private clearTimer(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }

  private take(): void {
    this.timer = undefined;
    if (!this.wanted || this.closed || this.broken || this.running > 0 || this.child) return;
    // dd reads one block of the reserve's size from /dev/zero (touching every page of its buffer),
    // then blocks writing it to the pipe: cts never reads it. If cts dies, the write fails and dd ends.
    const child = spawn(this.o.command ?? "dd", ["if=/dev/zero", `bs=${this.mb}M`, "count=1", "status=none"], { stdio: ["ignore", "pipe", "ignore"] });
    child.stdout?.pause();
    child.on("error", (err) => {
      this.broken = true;
      if (this.child === child) this.child = undefined;
      this.o.notice(`the memory reserve for Terraform cannot be held (${err.message}); runs after a quiet spell may start slower. Set driver.terraform.memoryReserveMb to false to stop trying.`);
    });
    child.on("exit", () => {
      if (this.child === child) this.child = undefined;
    });
    child.unref();
    (child.stdout as unknown as { unref?: () => void } | null)?.unref?.();
    this.child = child;
  }

  private async drop(): Promise<void> {
    const child = this.child;
    this.child = undefined;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    await new Promise<void>((resolve) => {
      child.once("exit", () => resolve());
      child.kill("SIGKILL");
    });
    child.stdout?.destroy();
  }
}

/** The virtio balloon's feature bit for free page reporting (VIRTIO_BALLOON_F_REPORTING). */
const FREE_PAGE_REPORTING = 5;

/**
 * Whether this machine is a VM that reports its free memory to the host, which takes it back: a
 * bound virtio balloon device with free page reporting (Linux; its `features` file is one 0/1
 * character per feature bit). Elsewhere new memory costs only the kernel's zeroing: no reserve.
 */
export function hostReclaimsFreeMemory(sysfs = "/sys/bus/virtio/drivers/virtio_balloon"): boolean {
  try {
    if (!existsSync(sysfs)) return false;
    return readdirSync(sysfs)
      .filter((n) => n.startsWith("virtio"))
      .some((n) => readFileSync(join(sysfs, n, "features"), "utf8")[FREE_PAGE_REPORTING] === "1");
  } catch {
    return false;
  }
}
