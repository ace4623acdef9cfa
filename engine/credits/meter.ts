/**
 * Credits sit behind this interface so the engine never knows whether it is metered. Local use is
 * unmetered (UNMETERED below); `crisp serve` plugs in a persistent ledger.
 */
import type { Caller } from '../api.js';
import type { TaskSettings } from '../contract/index.js';
import type { OutputSize } from './priceTable.js';

export interface Balance {
  currentCredits: number;
  currentExtraCredits: number;
}

export interface Settlement {
  creditsDeducted: boolean;
  deductedCredits: number;
}

export interface CreditMeter {
  /** Price of a task: a count of images of unknown size, or each output's size (undefined: not known yet). */
  quote(
    settings: Pick<TaskSettings, 'scale' | 'enhanceFace'>,
    images: number | readonly (OutputSize | undefined)[],
  ): number;
  /** get-upload-url: throws errors.insufficientCredits() when the caller has no available credit at all. */
  assertCanUpload(caller: Caller): Promise<void>;
  /** Before reading a request's bytes: throws insufficientCredits unless `cost` credits are available (reserves nothing). */
  assertCanAfford(caller: Caller, cost: number): Promise<void>;
  /** start-task: atomically checks available credit ≥ cost and reserves it, or throws insufficientCredits. */
  reserve(caller: Caller, taskId: string, cost: number): Promise<void>;
  /**
   * Raises (or lowers) a reserved task's charge to `cost`, e.g. once a URL input's size is known; throws
   * insufficientCredits (and leaves the reservation as it was) when the difference is not available.
   */
  adjust(caller: Caller, taskId: string, cost: number): Promise<void>;
  /** First status poll that sees PROCESSED: deducts the reservation exactly once; later calls return the same. */
  settle(caller: Caller, taskId: string): Promise<Settlement>;
  /** A failed task deducts nothing: frees its reservation (idempotent). */
  release(taskId: string): Promise<void>;
  balance(caller: Caller): Promise<Balance>;
}

export const UNMETERED: CreditMeter = {
  quote: () => 0,
  assertCanUpload: async () => {},
  assertCanAfford: async () => {},
  adjust: async () => {},
  reserve: async () => {},
  settle: async () => ({ creditsDeducted: true, deductedCredits: 0 }),
  release: async () => {},
  balance: async () => ({ currentCredits: 0, currentExtraCredits: 0 }),
};
