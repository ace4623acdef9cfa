/** The accounts store and the credit ledger on their own: hashing, atomicity, exactly-once settlement. */
import { readFile, rm } from 'node:fs/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { accountsFile, createJsonAccountStore, openAccountsState } from '../../engine/service/accounts/accountStore.js';
import { apiKeyMatches, hashApiKey } from '../../engine/service/accounts/apiKey.js';
import { createLedger } from '../../engine/service/credits/ledger.js';
import { DEFAULT_PRICE_TABLE, priceOf } from '../../engine/service/credits/priceTable.js';
import { tempDir } from './helpers.js';

const dirs: string[] = [];
afterEach(async () => {
  for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true });
});

async function open() {
  const dir = await tempDir('crisp-ledger-');
  dirs.push(dir);
  const state = await openAccountsState(dir);
  return { dir, state, accounts: createJsonAccountStore(state), ledger: createLedger(state) };
}

describe('accounts', () => {
  it('stores only a sha256 of the key and authenticates in constant time', async () => {
    const { dir, accounts } = await open();
    const { account, apiKey } = await accounts.addUser({ email: 'Ann@Example.com', credits: 3 });
    expect(apiKey).toMatch(/^crisp_[A-Za-z0-9_-]{43}$/);
    expect(account.email).toBe('ann@example.com');
    const file = await readFile(accountsFile(dir), 'utf8');
    expect(file).not.toContain(apiKey);
    expect(file).toContain(hashApiKey(apiKey));
    expect((await accounts.authenticate(apiKey))?.userId).toBe(account.userId);
    expect(await accounts.authenticate(`${apiKey}x`)).toBeUndefined();
    expect(apiKeyMatches(apiKey, hashApiKey(apiKey))).toBe(true);
    await expect(accounts.addUser({ email: 'ann@example.com' })).rejects.toThrow(/already exists/);
    await expect(accounts.addUser({ email: 'not-an-email' })).rejects.toThrow(/not an e-mail/);
  });

  it('sees users and credits written by another process (another store on the same file)', async () => {
    const { dir, accounts, ledger } = await open();
    const other = createJsonAccountStore(await openAccountsState(dir));
    const { apiKey, account } = await other.addUser({ email: 'late@example.com', credits: 1 });
    expect((await accounts.authenticate(apiKey))?.email).toBe('late@example.com');
    await other.addCredits('late@example.com', { credits: 4, extraCredits: 2 });
    const caller = { userId: account.userId, email: account.email };
    expect(await ledger.balance(caller)).toEqual({ currentCredits: 5, currentExtraCredits: 2 });
  });
});

describe('ledger', () => {
  it('prices by scale band plus a face surcharge per image', () => {
    const p = (scale: 1 | 2 | 3 | 4 | 5 | 6 | 7 | 8, enhanceFace: boolean, n: number) =>
      priceOf(DEFAULT_PRICE_TABLE, { scale, enhanceFace }, n);
    expect([p(1, false, 1), p(2, false, 1), p(3, false, 1), p(4, false, 1), p(6, false, 1), p(8, false, 1)]).toEqual([
      1, 1, 2, 2, 3, 4,
    ]);
    expect(p(4, true, 3)).toBe(9);
  });

  it('reserves atomically: of two concurrent reservations with credit for one, exactly one fails', async () => {
    const { accounts, ledger } = await open();
    const { account } = await accounts.addUser({ email: 'a@example.com', credits: 2 });
    const caller = { userId: account.userId, email: account.email };
    const results = await Promise.allSettled([ledger.reserve(caller, 't1', 2), ledger.reserve(caller, 't2', 2)]);
    expect(results.filter((r) => r.status === 'rejected')).toHaveLength(1);
    expect(await ledger.reservedFor(account.userId)).toBe(2);
    await expect(ledger.assertCanUpload(caller)).rejects.toMatchObject({
      status: 402,
      message: 'Insufficient credits',
    });
  });

  it('settles exactly once under concurrency, regular before extra, never negative; release frees', async () => {
    const { accounts, ledger, dir } = await open();
    const { account } = await accounts.addUser({ email: 'b@example.com', credits: 3, extraCredits: 5 });
    const caller = { userId: account.userId, email: account.email };
    await ledger.reserve(caller, 'big', 4);
    await ledger.reserve(caller, 'failed', 2);
    const settles = await Promise.all(Array.from({ length: 30 }, () => ledger.settle(caller, 'big')));
    expect(new Set(settles.map((s) => JSON.stringify(s)))).toEqual(
      new Set([JSON.stringify({ creditsDeducted: true, deductedCredits: 4 })]),
    );
    expect(await ledger.balance(caller)).toEqual({ currentCredits: 0, currentExtraCredits: 4 });
    await ledger.release('failed');
    await ledger.release('failed');
    expect(await ledger.settle(caller, 'failed')).toEqual({ creditsDeducted: false, deductedCredits: 0 });
    expect(await ledger.reservedFor(account.userId)).toBe(0);
    // Another user cannot settle (or learn about) this user's task.
    expect(await ledger.settle({ userId: 'usr_x', email: 'x@x' }, 'big')).toEqual({
      creditsDeducted: false,
      deductedCredits: 0,
    });
    // Persisted: a fresh open sees the same balances and charge states.
    const again = createLedger(await openAccountsState(dir));
    expect(await again.balance(caller)).toEqual({ currentCredits: 0, currentExtraCredits: 4 });
    expect(await again.settle(caller, 'big')).toEqual({ creditsDeducted: true, deductedCredits: 4 });
    await expect(again.reserve(caller, 'too-much', 5)).rejects.toMatchObject({ status: 402 });
  });
});
