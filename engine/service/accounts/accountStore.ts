/**
 * Users and their API keys. AccountStore is the seam a PostgreSQL implementation would fill; the JSON
 * implementation below shares its state file with the credit ledger (engine/service/credits/ledger.ts).
 */
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { apiKeyMatches, generateApiKey, hashApiKey } from './apiKey.js';
import { openStateFile, type StateFile } from './jsonStateFile.js';
import { emptyAccountsState, parseAccountsState, type AccountsState, type UserRecord } from './state.js';
import { CrispError } from '../../contract/errorCatalog.js';

/** A user as shown to operators and routes: everything but the key digest. */
export interface Account {
  userId: string;
  email: string;
  credits: number;
  extraCredits: number;
  createdAt: number;
}

export interface NewAccount {
  email: string;
  credits?: number;
  extraCredits?: number;
}

export interface AccountStore {
  /** Creates a user; the returned apiKey is the only copy that will ever exist. */
  addUser(input: NewAccount): Promise<{ account: Account; apiKey: string }>;
  listUsers(): Promise<Account[]>;
  /** Adds (never subtracts) regular and/or extra credits. */
  addCredits(email: string, amount: { credits?: number; extraCredits?: number }): Promise<Account>;
  /** The account owning this key, or undefined. */
  authenticate(apiKey: string): Promise<Account | undefined>;
  getUser(userId: string): Promise<Account | undefined>;
}

/** A catalog `account-refused` failure (engine/contract/errorCatalog.ts); the message says what and why. */
export class AccountError extends CrispError {
  override readonly name = 'AccountError';
  constructor(message: string) {
    super('account-refused', message);
  }
}

const EMAIL = /^[^\s@]+@[^\s@]+$/;

export function toAccount(u: UserRecord): Account {
  return { userId: u.userId, email: u.email, credits: u.credits, extraCredits: u.extraCredits, createdAt: u.createdAt };
}

function checkAmount(name: string, v: number | undefined): number {
  const n = v ?? 0;
  if (!Number.isSafeInteger(n) || n < 0) throw new AccountError(`${name} must be a non-negative integer`);
  return n;
}

/** Checks and normalises a new user's fields and mints its key; every AccountStore creates users through this. */
export function prepareNewUser(input: NewAccount): { record: UserRecord; apiKey: string } {
  const email = normaliseEmail(input.email);
  if (!EMAIL.test(email)) throw new AccountError(`'${input.email}' is not an e-mail address`);
  const credits = checkAmount('credits', input.credits);
  const extraCredits = checkAmount('extra credits', input.extraCredits);
  const apiKey = generateApiKey();
  const record: UserRecord = {
    userId: `usr_${randomBytes(8).toString('hex')}`,
    email,
    keyHash: hashApiKey(apiKey),
    credits,
    extraCredits,
    createdAt: Date.now(),
  };
  return { record, apiKey };
}

export function normaliseEmail(email: string): string {
  return email.trim().toLowerCase();
}

/** Checks an addCredits amount: non-negative integers only (credits are never taken away here). */
export function checkCreditAmount(amount: { credits?: number; extraCredits?: number }): {
  credits: number;
  extraCredits: number;
} {
  return {
    credits: checkAmount('credits', amount.credits),
    extraCredits: checkAmount('extra credits', amount.extraCredits),
  };
}

/** Keys longer than this are refused without hashing (no user has one; it bounds per-request work). */
export function plausibleApiKey(apiKey: string): boolean {
  return apiKey.length > 0 && apiKey.length <= 200;
}

export function accountsFile(dataDir: string): string {
  return path.join(dataDir, 'accounts.json');
}

export async function openAccountsState(dataDir: string): Promise<StateFile<AccountsState>> {
  return openStateFile({ file: accountsFile(dataDir), initial: emptyAccountsState, parse: parseAccountsState });
}

export function createJsonAccountStore(state: StateFile<AccountsState>): AccountStore {
  // Index by key digest, rebuilt only when the state object changes (every update swaps it).
  let indexed: AccountsState | undefined;
  let byHash = new Map<string, UserRecord>();
  const lookup = (hash: string): UserRecord | undefined => {
    const s = state.current();
    if (s !== indexed) {
      byHash = new Map(s.users.map((u) => [u.keyHash, u]));
      indexed = s;
    }
    return byHash.get(hash);
  };

  return {
    async addUser(input) {
      const { record, apiKey } = prepareNewUser(input);
      await state.update((s) => {
        if (s.users.some((u) => u.email === record.email))
          throw new AccountError(`a user with e-mail ${record.email} already exists`);
        s.users.push(record);
      });
      return { account: toAccount(record), apiKey };
    },
    async listUsers() {
      await state.refresh();
      return state.current().users.map(toAccount);
    },
    async addCredits(email, amount) {
      const e = normaliseEmail(email);
      const { credits, extraCredits } = checkCreditAmount(amount);
      const u = await state.update((s) => {
        const found = s.users.find((x) => x.email === e);
        if (!found) throw new AccountError(`no user with e-mail ${e}`);
        found.credits += credits;
        found.extraCredits += extraCredits;
        return found;
      });
      return toAccount(u);
    },
    async authenticate(apiKey) {
      if (!plausibleApiKey(apiKey)) return undefined;
      const hash = hashApiKey(apiKey);
      let u = lookup(hash);
      // A user added by `crisp users add` while the server runs is only in the file so far.
      if (!u) {
        await state.refresh();
        u = lookup(hash);
      }
      // The map lookup is keyed by a digest (no timing signal about the key); confirm in constant time.
      return u && apiKeyMatches(apiKey, u.keyHash) ? toAccount(u) : undefined;
    },
    async getUser(userId) {
      const u = state.current().users.find((x) => x.userId === userId);
      return u ? toAccount(u) : undefined;
    },
  };
}
