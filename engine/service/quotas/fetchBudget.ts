/**
 * The per-user budget of URL fetches: every URL a user asks the server to fetch is taken from it when
 * the task starts, whether the fetch later succeeds or fails. A failed fetch is refunded in credits, so
 * without this budget a user could keep the fetchers busy with dead hosts for free.
 */
import { CrispError } from '../../contract/index.js';

export class FetchBudget {
  /** Per user, when each fetch in the window was granted (oldest first). */
  private readonly granted = new Map<string, number[]>();

  constructor(
    private readonly budget: number,
    private readonly windowMs: number,
    private readonly now: () => number,
  ) {}

  /** Takes `count` fetches from the user's budget, or throws 429 naming when enough will be free again. */
  take(userId: string, count: number): void {
    if (count === 0 || !Number.isFinite(this.budget)) return;
    const t = this.now();
    const list = (this.granted.get(userId) ?? []).filter((at) => at > t - this.windowMs);
    if (list.length + count > this.budget) {
      this.granted.set(userId, list);
      const freeAt = list[Math.max(0, list.length + count - this.budget - 1)] ?? t;
      const minutes = Math.max(1, Math.ceil((freeAt + this.windowMs - t) / 60_000));
      throw new CrispError(
        'rate-limited',
        `Too Many Requests: this task asks for ${count} URL fetches but only ${Math.max(0, this.budget - list.length)} of your ${this.budget} per ${Math.round(this.windowMs / 60_000)} minutes are left; try again in ${minutes} min or upload the images instead`,
      );
    }
    for (let i = 0; i < count; i++) list.push(t);
    this.granted.set(userId, list);
  }
}
