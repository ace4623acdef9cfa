/**
 * The metered CreditMeter used by `crisp serve`. Every balance change runs inside the accounts state
 * file's update (in-process mutex + cross-process lock + atomic rename), so:
 * - reserve checks "available ≥ cost" and records the reservation in one step (two concurrent
 *   start-tasks with credit for one: the second sees the first's reservation);
 * - settle deducts a reservation at most once (the charge moves reserved → settled inside the update;
 *   later or concurrent calls see `settled` and return the same figures);
 * - regular credits are spent before extra credits, and neither goes below zero.
 */
import type { Caller } from '../api.js';
import { errors } from '../../contract/index.js';
import type { StateFile } from '../accounts/jsonStateFile.js';
import { availableCredits, type AccountsState } from '../accounts/state.js';
import type { Balance, CreditMeter, Settlement } from './meter.js';
import { DEFAULT_PRICE_TABLE, priceOf, type PriceTable } from './priceTable.js';

export interface Ledger extends CreditMeter {
  /** Credits still reserved by unfinished tasks (tests, diagnostics). */
  reservedFor(userId: string): Promise<number>;
}

export function createLedger(state: StateFile<AccountsState>, table: PriceTable = DEFAULT_PRICE_TABLE): Ledger {
  const userOf = (s: AccountsState, caller: Caller) => s.users.find((u) => u.userId === caller.userId);

  return {
    quote(settings, images): number {
      return priceOf(table, settings, images);
    },

    async assertCanAfford(caller, cost) {
      await state.refresh();
      const s = state.current();
      const u = userOf(s, caller);
      if (!u || availableCredits(s, u) < Math.max(1, cost)) throw errors.insufficientCredits();
    },

    async adjust(caller, taskId, cost) {
      if (!Number.isSafeInteger(cost) || cost < 0) throw new Error(`invalid cost ${cost}`);
      await state.update((s) => {
        const c = s.charges[taskId];
        const u = userOf(s, caller);
        if (!c || !u || c.userId !== u.userId || c.state !== 'reserved') throw errors.insufficientCredits();
        // availableCredits already subtracts this charge's current cost.
        if (cost > c.cost && availableCredits(s, u) < cost - c.cost) throw errors.insufficientCredits();
        c.cost = cost;
      });
    },

    async assertCanUpload(caller) {
      await state.refresh();
      const s = state.current();
      const u = userOf(s, caller);
      if (!u || availableCredits(s, u) <= 0) throw errors.insufficientCredits();
    },

    async reserve(caller, taskId, cost) {
      if (!Number.isSafeInteger(cost) || cost < 0) throw new Error(`invalid cost ${cost}`);
      await state.update((s) => {
        const u = userOf(s, caller);
        if (!u) throw errors.insufficientCredits();
        if (s.charges[taskId]) throw new Error(`task ${taskId} already has a charge`);
        if (availableCredits(s, u) < cost) throw errors.insufficientCredits();
        s.charges[taskId] = { userId: u.userId, cost, state: 'reserved', deducted: 0, createdAt: Date.now() };
      });
    },

    async settle(caller, taskId): Promise<Settlement> {
      const seen = state.current().charges[taskId];
      // Fast path for the common repeated poll: already settled, no write needed.
      if (seen && seen.userId === caller.userId && seen.state === 'settled') {
        return { creditsDeducted: true, deductedCredits: seen.deducted };
      }
      return state.update((s): Settlement => {
        const c = s.charges[taskId];
        if (!c || c.userId !== caller.userId) return { creditsDeducted: false, deductedCredits: 0 };
        if (c.state === 'settled') return { creditsDeducted: true, deductedCredits: c.deducted };
        if (c.state === 'released') return { creditsDeducted: false, deductedCredits: 0 };
        const u = s.users.find((x) => x.userId === c.userId);
        if (!u) return { creditsDeducted: false, deductedCredits: 0 };
        const fromRegular = Math.min(u.credits, c.cost);
        const fromExtra = Math.min(u.extraCredits, c.cost - fromRegular);
        u.credits -= fromRegular;
        u.extraCredits -= fromExtra;
        c.state = 'settled';
        c.deducted = fromRegular + fromExtra;
        c.endedAt = Date.now();
        return { creditsDeducted: true, deductedCredits: c.deducted };
      });
    },

    async release(taskId) {
      const seen = state.current().charges[taskId];
      if (seen && seen.state !== 'reserved') return;
      await state.update((s) => {
        const c = s.charges[taskId];
        if (!c || c.state !== 'reserved') return;
        c.state = 'released';
        c.endedAt = Date.now();
      });
    },

    async balance(caller): Promise<Balance> {
      await state.refresh();
      const u = userOf(state.current(), caller);
      return { currentCredits: u?.credits ?? 0, currentExtraCredits: u?.extraCredits ?? 0 };
    },

    async reservedTaskIds() {
      await state.refresh();
      return Object.entries(state.current().charges)
        .filter(([, c]) => c.state === 'reserved')
        .map(([id]) => id);
    },

    async reservedFor(userId) {
      let n = 0;
      for (const c of Object.values(state.current().charges))
        if (c.userId === userId && c.state === 'reserved') n += c.cost;
      return n;
    },
  };
}
