/**
 * Ledger compaction: accounts.json holds every task's charge so reserve/settle/release stay atomic with
 * the balances, but a settled or released charge only matters while its task can still be polled. Once
 * it has ended longer ago than the retention period (default 7 days; tasks and outputs live 24 h), the
 * charge moves to an append-only archive (`ledger-archive.jsonl`, one JSON line per charge, fsynced)
 * and leaves the state file, so the file that is rewritten on every change stays small.
 *
 * Order matters for crashes: lines are appended (and synced) before the charges leave the state file,
 * so a crash in between can only repeat a line in the archive (readers keep the last line per taskId),
 * never lose a charge.
 */
import { open } from 'node:fs/promises';
import path from 'node:path';
import type { StateFile } from '../accounts/jsonStateFile.js';
import type { AccountsState, Charge } from '../accounts/state.js';

export const DEFAULT_LEDGER_RETENTION_MS = 7 * 24 * 3_600_000;

export function ledgerArchiveFile(dataDir: string): string {
  return path.join(dataDir, 'ledger-archive.jsonl');
}

export interface CompactionResult {
  archived: number;
  kept: number;
}

export async function compactLedger(
  state: StateFile<AccountsState>,
  archiveFile: string,
  opts: { retentionMs?: number; now?: number } = {},
): Promise<CompactionResult> {
  const cutoff = (opts.now ?? Date.now()) - (opts.retentionMs ?? DEFAULT_LEDGER_RETENTION_MS);
  await state.refresh();
  const old = (c: Charge) => c.state !== 'reserved' && c.endedAt !== undefined && c.endedAt < cutoff;
  const chosen = Object.entries(state.current().charges).filter(([, c]) => old(c));
  if (chosen.length > 0) {
    const h = await open(archiveFile, 'a', 0o600);
    try {
      await h.writeFile(chosen.map(([taskId, c]) => `${JSON.stringify({ taskId, ...c })}\n`).join(''));
      await h.sync();
    } finally {
      await h.close();
    }
    await state.update((s) => {
      // An ended charge never changes again, so what was archived is exactly what is removed.
      for (const [taskId] of chosen) if (s.charges[taskId] && old(s.charges[taskId])) delete s.charges[taskId];
    });
  }
  return { archived: chosen.length, kept: Object.keys(state.current().charges).length };
}
