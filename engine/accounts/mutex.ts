/**
 * A promise-chain mutex: callers run one at a time, in arrival order. Used to serialise every
 * read-modify-write of a persisted state file inside one process (the lock file covers other processes).
 */
export class Mutex {
  private tail: Promise<void> = Promise.resolve();

  async run<T>(fn: () => Promise<T> | T): Promise<T> {
    const previous = this.tail;
    let release!: () => void;
    this.tail = new Promise<void>((resolve) => (release = resolve));
    try {
      await previous;
      return await fn();
    } finally {
      release();
    }
  }
}
