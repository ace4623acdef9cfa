/**
 * The bottom bar: one sentence with every state's count (from the same status model as the queue and
 * the banner), elapsed time and ETA while running, and Upscale / Resume / Stop.
 */
import { useEffect, useRef, useState } from 'react';
import { useShallow } from 'zustand/react/shallow';
import { useT } from '../i18n/useT.js';
import { useActions, useQueue, useSession, useSettings } from '../stores/appContext.js';
import { selectBalance, selectEstimate, selectInsufficient } from '../stores/sessionStore.js';
import { credits } from '../format.js';
import { selectBatch, selectCanStart, selectItems, selectStopped } from '../stores/queueStore.js';
import { isCloudConfigured } from '../stores/actions.js';
import { selectCurrentModel, selectIsCloud } from '../stores/settingsStore.js';
import { createEtaEstimator, type EtaEstimator } from '../stores/etaEstimator.js';
import { countStates, formatDuration, statusLine } from '../stores/statusModel.js';

/** Re-renders every second while `on`, for the clock. */
function useTicker(on: boolean): number {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    if (!on) return;
    const t = setInterval(() => setNow(Date.now()), 1000);
    return () => clearInterval(t);
  }, [on]);
  return now;
}

/**
 * Why waiting images cannot start with the current settings, in words for the bottom bar; null when they can.
 * One source for the Upscale button, Ctrl/⌘+Enter and the bar's sentence, so the bar never says "Ready"
 * beside a greyed Upscale.
 */
export function useStartBlocker(): string | null {
  const model = useSettings(selectCurrentModel);
  const isCloud = useSettings(selectIsCloud);
  // Cloud without a URL and key cannot run anything: the connect card says what to do instead.
  const cloudReady = useSettings((s) => isCloudConfigured(s.settings, s.hasApiKey));
  const insufficient = useSession(selectInsufficient);
  const needed = useSession((s) => selectEstimate(s)?.credits ?? 0);
  const balance = useSession((s) => selectBalance(s) ?? 0);
  const twice = useSettings((s) => s.settings?.passes === 2);
  const waiting = useSession((s) => selectEstimate(s)?.items ?? 0);
  const tooLarge = useSession((s) => selectEstimate(s)?.tooLarge ?? 0);
  const tr = useT();
  const { t } = tr;
  if (isCloud && !cloudReady) return t('blocked.cloud');
  // A service upscales each image once per task: every image would be refused (remoteBackend.ts).
  if (isCloud && twice) return t('blocked.passesCloud');
  // Known to need more credits than the account has: Upscale would only be refused.
  if (isCloud && insufficient)
    return t('blocked.credits', { needed: credits(needed, tr), balance: credits(balance, tr) });
  // A model that cannot run (not installed here, or not offered by the service) starts nothing.
  if (model && !model.installed) return t('blocked.modelMissing', { model: model.title });
  // Every waiting image would be refused for its output size (the service checks with the engine's own rules).
  if (waiting > 0 && tooLarge >= waiting) return t('blocked.tooLarge', { n: waiting });
  return null;
}

export function useStartable(): boolean {
  const canStart = useQueue(selectCanStart);
  const blocker = useStartBlocker();
  return canStart && blocker === null;
}

export function ActionBar() {
  const batch = useQueue(useShallow(selectBatch));
  const items = useQueue(useShallow(selectItems));
  const stopped = useQueue(selectStopped);
  const runStartedAt = useQueue((s) => s.runStartedAt);
  const startable = useStartable();
  const blocker = useStartBlocker();
  const { start, stop, resume } = useActions();
  const tr = useT();
  const { t } = tr;
  const counts = countStates(items);
  const now = useTicker(batch.running);
  const elapsed = batch.running && runStartedAt !== null ? now - runStartedAt : null;
  // One estimator per run; it is fed on every render (the ticker renders once a second while running).
  const estimator = useRef<{ run: number; eta: EtaEstimator } | null>(null);
  if (runStartedAt !== null && estimator.current?.run !== runStartedAt)
    estimator.current = { run: runStartedAt, eta: createEtaEstimator(runStartedAt) };
  const eta = elapsed !== null && estimator.current ? estimator.current.eta.sample(now, batch.percent) : null;

  return (
    <footer className="actionbar">
      <div className="batch">
        <progress aria-label={t('bar.progress')} max={100} value={Math.round(batch.percent)} />
        <span data-testid="batch-status" aria-live="polite">
          {statusLine(counts, batch.running, tr, blocker)}
        </span>
        {elapsed !== null ? (
          <span className="muted small" data-testid="batch-clock">
            {t('bar.elapsed', { elapsed: formatDuration(elapsed, tr) })}
            {eta !== null ? t('bar.left', { eta: formatDuration(eta, tr) }) : ''}
          </span>
        ) : null}
      </div>
      <div className="actionbar-buttons">
        {stopped > 0 && !batch.running ? (
          <button type="button" onClick={() => void resume()}>
            {t('bar.resume', { n: stopped })}
          </button>
        ) : null}
        <button
          type="button"
          className="primary"
          disabled={!startable}
          aria-keyshortcuts="Control+Enter"
          onClick={() => void start()}
        >
          {t('bar.upscale')}
        </button>
        <button type="button" disabled={!batch.running} aria-keyshortcuts="Escape" onClick={() => void stop()}>
          {t('bar.stop')}
        </button>
      </div>
    </footer>
  );
}
