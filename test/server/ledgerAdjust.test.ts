/**
 * The two ledger operations the abuse bounds add, on both stores (JSON file and PostgreSQL):
 * assertCanAfford (the start-task gate before a body is read: checks, reserves nothing) and adjust
 * (a URL task's reservation raised once its images' sizes are known, only within available credit).
 */
import { rm } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createJsonAccountStore,
  openAccountsState,
  type AccountStore,
} from '../../engine/service/accounts/accountStore.js';
import { createPgAccountStore } from '../../engine/service/accounts/pgAccountStore.js';
import { createLedger, type Ledger } from '../../engine/service/credits/ledger.js';
import { createPgLedger } from '../../engine/service/credits/pgLedger.js';
import { openPostgres, type Pool } from '../../engine/service/db/postgres.js';
import { createDatabase, startTempPostgres, type TempPostgres } from '../helpers/postgres.js';
import { tempDir } from './helpers.js';

let pgServer: TempPostgres;
let pool: Pool;
let dir: string;

beforeAll(async () => {
  pgServer = await startTempPostgres();
  pool = await openPostgres(await createDatabase(pgServer.url, 'crisp_adjust'));
  dir = await tempDir('crisp-adjust-');
}, 60_000);
afterAll(async () => {
  await pool?.end();
  await pgServer?.stop();
  await rm(dir, { recursive: true, force: true });
});

const TASK = '00000000-0000-4000-8000-00000000000a';
const OTHER = '00000000-0000-4000-8000-00000000000b';

const stores: Array<[string, () => Promise<{ accounts: AccountStore; ledger: Ledger }>]> = [
  [
    'JSON',
    async () => {
      const state = await openAccountsState(dir);
      return { accounts: createJsonAccountStore(state), ledger: createLedger(state) };
    },
  ],
  ['PostgreSQL', async () => ({ accounts: createPgAccountStore(pool), ledger: createPgLedger(pool) })],
];

describe.each(stores)('%s ledger', (_name, open) => {
  it('checks affordability without reserving, and raises a reservation only within available credit', async () => {
    const { accounts, ledger } = await open();
    const { account } = await accounts.addUser({ email: 'adjust@example.com', credits: 4, extraCredits: 1 });
    const caller = { userId: account.userId, email: account.email };
    await ledger.assertCanAfford(caller, 5);
    await expect(ledger.assertCanAfford(caller, 6)).rejects.toMatchObject({
      status: 402,
      message: 'Insufficient credits',
    });
    expect(await ledger.reservedFor(account.userId)).toBe(0);

    await ledger.reserve(caller, TASK, 1);
    await ledger.reserve(caller, OTHER, 1);
    await ledger.adjust(caller, TASK, 4);
    expect(await ledger.reservedFor(account.userId)).toBe(5);
    await expect(ledger.adjust(caller, TASK, 5)).rejects.toMatchObject({ status: 402 });
    expect(await ledger.reservedFor(account.userId)).toBe(5);
    await expect(ledger.assertCanAfford(caller, 1)).rejects.toMatchObject({ status: 402 });

    const settled = await ledger.settle(caller, TASK);
    expect(settled).toEqual({ creditsDeducted: true, deductedCredits: 4 });
    // A settled charge is final.
    await expect(ledger.adjust(caller, TASK, 1)).rejects.toMatchObject({ status: 402 });
    expect(await ledger.balance(caller)).toEqual({ currentCredits: 0, currentExtraCredits: 1 });
  });
});
