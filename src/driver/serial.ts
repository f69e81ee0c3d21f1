/** Runs async jobs one at a time per key; jobs under different keys run in parallel. */
export interface KeyedSerializer {
  /** Runs `job` after every earlier job of the same key has settled. */
  run<T>(key: string, job: () => Promise<T>): Promise<T>;
  /** Keys with a job running or waiting (for tests and status). */
  busyKeys(): string[];
}

/** A per-key promise chain: the simplest lock that cannot deadlock and frees idle keys. */
export function createKeyedSerializer(): KeyedSerializer {
  const tails = new Map<string, Promise<void>>();
  return {
    run<T>(key: string, job: () => Promise<T>): Promise<T> {
      const previous = tails.get(key) ?? Promise.resolve();
      const result = previous.then(job);
      const tail = result.then(
        () => undefined,
        () => undefined,
      );
      tails.set(key, tail);
      void tail.then(() => {
        if (tails.get(key) === tail) tails.delete(key);
      });
      return result;
    },
    busyKeys: () => [...tails.keys()],
  };
}
