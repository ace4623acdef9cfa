/**
 * Turns at the grain of a model run: the jobs a core worker thread holds at once (at most two, workerPool.ts)
 * take their tiles' model runs in turn, round-robin across their keys, so a giant image cannot hold the
 * thread's inference for hours while another caller's small image waits for all of its tiles.
 *
 * A key is whatever the caller shares turns by (the service passes the task's user id, jobs that name none
 * share the key ''); core knows nothing of users. One turn is one model run (onnxruntime's run is one
 * synchronous native call: nothing else runs on the thread meanwhile). A run is never made to wait while no
 * job of another key is waiting, arriving or finishing, so a lone job runs its tiles back to back as before.
 *
 * Arriving (joined, no turn asked yet: resolving its model, probing, decoding) and finishing (its model work
 * over: encoding, writing) are the phases in which a job is a chain of short steps on this thread around work
 * in libvips's threads and the disk. Each step needs the thread between two runs, so if the other job took
 * turn after turn meanwhile, a small image would advance one step per tile of a giant and wait most of it
 * out; a turn of another key waits for those phases instead. Between its own tiles (stitching, a held test
 * gate) a job holds nobody.
 */

/** Runs one model run of a job when its turn comes; answers what the run answers. */
export type TileTurn = <T>(run: () => Promise<T>) => Promise<T>;

/**
 * One job's place in the turns: its runs go through `turn`; `finishing` once its model work is over (it
 * encodes); `leave` once it ends, however it ends.
 */
export interface TurnSeat {
  turn: TileTurn;
  finishing(): void;
  leave(): void;
}

interface Member {
  key: string;
  phase: 'arriving' | 'tiling' | 'finishing';
}

export class TileTurns {
  /** Runs waiting for a turn, per key, in arrival order. */
  private readonly waiting = new Map<string, (() => void)[]>();
  /** Keys with a waiting run; the next turn goes to the first. */
  private readonly order: string[] = [];
  /** Every job that joined and has not left. */
  private readonly members = new Set<Member>();
  private busy = false;
  /** The key that had the last turn. */
  private last: string | undefined;

  /** A job with this key joins (as it starts, before it reads its image). */
  join(key: string): TurnSeat {
    const member: Member = { key, phase: 'arriving' };
    this.members.add(member);
    return {
      turn: (run) => {
        member.phase = 'tiling';
        return this.take(key, run);
      },
      finishing: () => {
        member.phase = 'finishing';
      },
      leave: () => {
        if (this.members.delete(member)) this.grant();
      },
    };
  }

  /** How many runs wait for a turn (tests). */
  get queued(): number {
    let n = 0;
    for (const q of this.waiting.values()) n += q.length;
    return n;
  }

  private async take<T>(key: string, run: () => Promise<T>): Promise<T> {
    // One pass of the event loop first: a job the pool sent while the last run held the thread joins now,
    // before this turn is given (messages and I/O callbacks run before setImmediate's).
    await new Promise<void>((resolve) => setImmediate(resolve));
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

  /**
   * Hands the free turn to the first waiting key other than the one that had the last turn (that one only
   * when no other waits); the key then goes to the back of the line.
   */
  private grant(): void {
    if (this.busy || this.order.length === 0) return;
    const i = Math.max(
      0,
      this.order.findIndex((k) => k !== this.last),
    );
    const key = this.order[i]!;
    for (const m of this.members) if (m.key !== key && m.phase !== 'tiling') return;
    this.order.splice(i, 1);
    this.last = key;
    const q = this.waiting.get(key) as (() => void)[];
    const next = q.shift() as () => void;
    if (q.length > 0) this.order.push(key);
    else this.waiting.delete(key);
    this.busy = true;
    next();
  }
}
