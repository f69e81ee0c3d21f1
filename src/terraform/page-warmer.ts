import { open } from "node:fs/promises";
import { findExecutable } from "./executable.ts";

/** How often the programs' files are read through while quiet spells are kept fast. */
export const PAGE_WARM_INTERVAL_MS = 30_000;

/**
 * Keeps the files of the programs a run starts (the Terraform binary, the binaries of the warm
 * provider processes, and the daemon's own `node`) in memory the machine has ready, through quiet
 * spells. On a VM whose host
 * takes back guest memory nobody touched for a while, the page cache of those files goes cold: on
 * the 2-core benchmark VM, reading the 115 MB `tofu` binary took 138 ms after 3 quiet minutes
 * against 27–31 ms back to back, and the first change after 10 quiet minutes took 2.5× its
 * back-to-back time, in every step of OpenTofu; after 10 quiet minutes, reading the `node` binary
 * took 110 ms against 31 ms. Reading the files through every 30 s (one 1 MB buffer, about 55 ms of
 * CPU for OpenTofu, a small provider and `node`) keeps them warm; on a machine
 * without that behaviour it only reads cached pages. Runs only while the daemon keeps quiet spells
 * fast (a task class without a buffer period) and no operation runs.
 */
export class PageWarmer {
  private timer: NodeJS.Timeout | undefined;
  private reading = false;
  private buffer: Buffer | undefined;

  constructor(
    /** The files to keep warm now (none while an operation runs). */
    private readonly files: () => Promise<string[]>,
    private readonly intervalMs = PAGE_WARM_INTERVAL_MS,
  ) {}

  /** Reads the files through every interval while `on`; off lets go of the buffer. */
  keep(on: boolean): void {
    if (on && !this.timer) {
      this.timer = setInterval(() => void this.touch(), this.intervalMs);
      this.timer.unref();
    } else if (!on && this.timer) {
      clearInterval(this.timer);
      this.timer = undefined;
      this.buffer = undefined;
    }
  }

  /** Reads every file through once (skipped while the last pass still reads); the bytes read. */
  async touch(): Promise<number> {
    if (this.reading) return 0;
    this.reading = true;
    let bytes = 0;
    try {
      const buffer = (this.buffer ??= Buffer.allocUnsafe(1 << 20));
      for (const file of new Set(await this.files())) bytes += await readThrough(file, buffer);
    } catch {
      // Keeping pages warm is a nicety: a file that went away is read again when it is back.
    } finally {
      this.reading = false;
    }
    return bytes;
  }

  close(): void {
    this.keep(false);
  }
}

async function readThrough(file: string, buffer: Buffer): Promise<number> {
  let bytes = 0;
  const fh = await open(file, "r").catch(() => undefined);
  if (!fh) return 0;
  try {
    for (;;) {
      const { bytesRead } = await fh.read(buffer, 0, buffer.length, null);
      if (!bytesRead) return bytes;
      bytes += bytesRead;
    }
  } finally {
    await fh.close();
  }
}

/** The Terraform binary's absolute path (a path, or found on PATH), looked up once. */
export function binaryPath(binary: string): () => Promise<string | undefined> {
  let found: Promise<string | undefined> | undefined;
  return () => (found ??= findExecutable(binary).catch(() => undefined));
}
