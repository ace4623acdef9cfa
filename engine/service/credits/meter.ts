/**
 * Credits sit behind this interface so the engine never knows whether it is metered. Local use is
 * unmetered (UNMETERED below); `crisp serve` plugs in a persistent ledger.
 */
import type { Caller } from '../api.js';
import type { TaskSettings } from '../../contract/index.js';
import type { PoolClient } from '../db/postgres.js';
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
   * Meters on PostgreSQL: reserve like `reserve` and run `alsoWrite` (the task row's insert) in the same
   * transaction, so a charge never exists without its task nor a task without its charge, even across a
   * kill -9. Absent (the JSON ledger): the engine reserves, saves, and reconciles at start-up instead.
   */
  reserveWith?(
    caller: Caller,
    taskId: string,
    cost: number,
    alsoWrite: (db: PoolClient) => Promise<void>,
  ): Promise<void>;
  /** Ids of the tasks whose charge is still reserved (start-up reconciliation of the embedded store). */
  reservedTaskIds?(): Promise<string[]>;
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
