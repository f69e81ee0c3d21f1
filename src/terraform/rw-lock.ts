/** A readers/writer lock for async jobs. */
export interface RwLock {
  /** Runs `job` alongside other shared jobs, never alongside an exclusive one. */
  shared<T>(job: () => Promise<T>): Promise<T>;
  /** Runs `job` alone. */
  exclusive<T>(job: () => Promise<T>): Promise<T>;
}

/**
 * Writer-preferring readers/writer lock: once an exclusive job waits, new shared jobs queue behind
 * it, so a steady stream of plans cannot starve an `init`. Waiters are served in arrival order.
 */
export function createRwLock(): RwLock {
  let readers = 0;
  let writing = false;
  const queue: Array<{ exclusive: boolean; start: () => void }> = [];

  const pump = () => {
    while (queue.length && !writing) {
      const next = queue[0]!;
      if (next.exclusive) {
        if (readers > 0) return;
        queue.shift();
        writing = true;
        next.start();
        return;
      }
      queue.shift();
      readers++;
      next.start();
    }
  };

  const acquire = (exclusive: boolean) =>
    new Promise<void>((resolve) => {
      queue.push({ exclusive, start: resolve });
      pump();
    });

  const run = async <T>(exclusive: boolean, job: () => Promise<T>): Promise<T> => {
    await acquire(exclusive);
    try {
      return await job();
    } finally {
      if (exclusive) writing = false;
      else readers--;
      pump();
    }
  };

  return { shared: (job) => run(false, job), exclusive: (job) => run(true, job) };
}
