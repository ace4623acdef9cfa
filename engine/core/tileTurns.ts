/**
 * Turns at the grain of a model run: the jobs a core worker thread holds at once (at most two, workerPool.ts)
 * take their tiles' model runs in turn, round-robin across their keys, so a giant image cannot hold the
 * thread's inference for hours while another caller's small image waits for all of its tiles.
 *
 * A key is whatever the caller shares turns by (the service passes the task's user id, jobs that name none
 * share the key ''); core knows nothing of users. One turn is one model run (onnxruntime's run is one
 * synchronous native call: nothing else runs on the thread meanwhile). A run is never made to wait while no
 * other key is waiting, so a lone job runs its tiles back to back as before.
 */

/** Runs one model run of a job when its turn comes; answers what the run answers. */
export type TileTurn = <T>(run: () => Promise<T>) => Promise<T>;

export class TileTurns {
  /** Runs waiting for a turn, per key, in arrival order. */
  private readonly waiting = new Map<string, (() => void)[]>();
  /** Keys with a waiting run; the next turn goes to the first. */
  private readonly order: string[] = [];
  private busy = false;

  /** The turn function of one job with this key. */
  forKey(key: string): TileTurn {
    return (run) => this.take(key, run);
  }

  /** How many runs wait for a turn (tests and the pool's figures). */
  get queued(): number {
    let n = 0;
    for (const q of this.waiting.values()) n += q.length;
    return n;
  }

  private async take<T>(key: string, run: () => Promise<T>): Promise<T> {
    await new Promise<void>((granted) => {
      const q = this.waiting.get(key);
      if (q) q.push(granted);
      else {
        this.waiting.set(key, [granted]);
        this.order.push(key);
      }
      this.grant();
    });
    try {
      return await run();
    } finally {
      this.busy = false;
      this.grant();
    }
  }

  /** Hands the free turn to the first waiting key, which then goes to the back of the line. */
  private grant(): void {
    if (this.busy) return;
    const key = this.order.shift();
    if (key === undefined) return;
    const q = this.waiting.get(key) as (() => void)[];
    const next = q.shift() as () => void;
    if (q.length > 0) this.order.push(key);
    else this.waiting.delete(key);
    this.busy = true;
    next();
  }
}
