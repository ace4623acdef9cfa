/** This session's account view, the credit estimate for the waiting items, and the notice line. */
import { createStore } from 'zustand/vanilla';
import type { AccountView, CreditEstimate } from '../../../app/service/crispService.js';

export interface Notice {
  kind: 'error' | 'info';
  text: string;
  /** One line per file when several were refused together (each file gets its own reason). */
  lines?: string[];
  /** A notice caused by one mode's action disappears when the other mode is chosen. */
  mode?: 'local' | 'cloud';
}

/** The Cloud card's connection check: what the last "Test connection" (or balance read) found. */
export type ConnectionState =
  | { state: 'idle' }
  | { state: 'testing' }
  | { state: 'ok' }
  /** `code`: the failure's ErrorCode, which says which field the error belongs beside. */
  | { state: 'failed'; error: string; code?: string };

export interface BatchSummary {
  done: number;
  failed: number;
  total: number;
}

export interface SessionState {
  account: AccountView | null;
  estimate: CreditEstimate | null;
  notice: Notice | null;
  lastBatch: BatchSummary | null;
  connection: ConnectionState;
  /** Keyboard help dialog open. */
  helpOpen: boolean;
  setConnection(connection: ConnectionState): void;
  setHelpOpen(open: boolean): void;
  setAccount(account: AccountView | null): void;
  setEstimate(estimate: CreditEstimate | null): void;
  showNotice(notice: Notice | null): void;
  setLastBatch(summary: BatchSummary | null): void;
}

export type SessionStore = ReturnType<typeof createSessionStore>;

export function createSessionStore() {
  return createStore<SessionState>()((set) => ({
    account: null,
    estimate: null,
    notice: null,
    lastBatch: null,
    connection: { state: 'idle' },
    helpOpen: false,
    setConnection: (connection) => set({ connection }),
    setHelpOpen: (helpOpen) => set({ helpOpen }),
    setAccount: (account) => set({ account }),
    setEstimate: (estimate) => set({ estimate }),
    showNotice: (notice) => set({ notice }),
    setLastBatch: (lastBatch) => set({ lastBatch }),
  }));
}

/** Regular plus extra credits; null when the server does not report a balance. */
export const selectBalance = (s: SessionState): number | null =>
  s.account?.available && s.account.currentCredits !== undefined
    ? s.account.currentCredits + (s.account.currentExtraCredits ?? 0)
    : null;

/** True only when both numbers are known and the waiting items need more than the balance. */
export const selectInsufficient = (s: SessionState): boolean => {
  const balance = selectBalance(s);
  return balance !== null && s.estimate !== null && s.estimate.mode === 'cloud' && s.estimate.credits > balance;
};
export const selectNotice = (s: SessionState) => s.notice;
export const selectEstimate = (s: SessionState) => s.estimate;
