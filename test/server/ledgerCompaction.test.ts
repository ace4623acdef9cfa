/** Ledger compaction: ended charges past the retention leave accounts.json for the append-only archive. */
import { readFile, rm } from 'node:fs/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { accountsFile, createJsonAccountStore, openAccountsState } from '../../engine/service/accounts/accountStore.js';
import { createLedger } from '../../engine/service/credits/ledger.js';
import {
  compactLedger,
  DEFAULT_LEDGER_RETENTION_MS,
  ledgerArchiveFile,
} from '../../engine/service/credits/ledgerCompaction.js';
import { tempDir } from './helpers.js';

const dirs: string[] = [];
afterEach(async () => {
  for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true });
});

const TASKS = [
  '00000000-0000-4000-8000-000000000001',
  '00000000-0000-4000-8000-000000000002',
  '00000000-0000-4000-8000-000000000003',
];

describe('ledger compaction', () => {
  it('archives settled and released charges past the retention, keeps reserved ones and every balance', async () => {
    const dir = await tempDir('crisp-compact-');
    dirs.push(dir);
    const state = await openAccountsState(dir);
    const accounts = createJsonAccountStore(state);
    const ledger = createLedger(state);
    const { account } = await accounts.addUser({ email: 'c@example.com', credits: 10 });
    const caller = { userId: account.userId, email: account.email };
    const [settled, released, reserved] = TASKS as [string, string, string];
    await ledger.reserve(caller, settled, 3);
    await ledger.settle(caller, settled);
    await ledger.reserve(caller, released, 2);
    await ledger.release(released);
    await ledger.reserve(caller, reserved, 4);

    // Not yet past the retention: nothing moves.
    expect(await compactLedger(state, ledgerArchiveFile(dir))).toEqual({ archived: 0, kept: 3 });

    const later = Date.now() + DEFAULT_LEDGER_RETENTION_MS + 1000;
    expect(await compactLedger(state, ledgerArchiveFile(dir), { now: later })).toEqual({ archived: 2, kept: 1 });
    const file = await readFile(accountsFile(dir), 'utf8');
    expect(file).not.toContain(settled);
    expect(file).not.toContain(released);
    expect(file).toContain(reserved);
    const lines = (await readFile(ledgerArchiveFile(dir), 'utf8'))
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { taskId: string; state: string; deducted: number });
    expect(lines.map((l) => [l.taskId, l.state, l.deducted]).sort()).toEqual([
      [settled, 'settled', 3],
      [released, 'released', 0],
    ]);
    expect(await ledger.balance(caller)).toEqual({ currentCredits: 7, currentExtraCredits: 0 });
    expect(await ledger.reservedFor(account.userId)).toBe(4);
    // A second pass archives nothing twice.
    expect(await compactLedger(state, ledgerArchiveFile(dir), { now: later })).toEqual({ archived: 0, kept: 1 });
  });
});
