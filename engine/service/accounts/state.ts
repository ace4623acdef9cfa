/**
 * The persisted accounts state: users and the credit ledger's per-task charges live in one file so a
 * balance change and the charge it settles are written together (one atomic rename).
 */
export interface UserRecord {
  userId: string;
  email: string;
  /** sha256 of the API key, hex. The key itself is never stored. */
  keyHash: string;
  credits: number;
  extraCredits: number;
  createdAt: number;
}

export type ChargeState = 'reserved' | 'settled' | 'released';

/** One task's credits: reserved at start-task, then settled (deducted) or released, exactly once. */
export interface Charge {
  userId: string;
  cost: number;
  state: ChargeState;
  /** Amount actually deducted (settled charges only). */
  deducted: number;
  createdAt: number;
  endedAt?: number;
}

export interface AccountsState {
  version: 1;
  users: UserRecord[];
  charges: Record<string, Charge>;
}

export function emptyAccountsState(): AccountsState {
  return { version: 1, users: [], charges: {} };
}

const isCount = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;

/** Refuses a corrupt file loudly: silently starting empty would wipe every balance. */
export function parseAccountsState(raw: unknown): AccountsState {
  const s = raw as Partial<AccountsState> | null;
  if (!s || s.version !== 1 || !Array.isArray(s.users) || typeof s.charges !== 'object' || s.charges === null) {
    throw new Error('accounts state file is not a Crisp accounts file (version 1)');
  }
  for (const u of s.users) {
    if (
      typeof u.userId !== 'string' ||
      typeof u.email !== 'string' ||
      typeof u.keyHash !== 'string' ||
      !isCount(u.credits) ||
      !isCount(u.extraCredits)
    ) {
      throw new Error('accounts state file holds a malformed user record');
    }
  }
  return s as AccountsState;
}

/** Credits still free to reserve: balance minus what unfinished tasks hold. */
export function availableCredits(state: AccountsState, user: UserRecord): number {
  let reserved = 0;
  for (const c of Object.values(state.charges))
    if (c.userId === user.userId && c.state === 'reserved') reserved += c.cost;
  return user.credits + user.extraCredits - reserved;
}
