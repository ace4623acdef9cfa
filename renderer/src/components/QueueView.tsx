/**
 * The queue: one row per image with its thumbnail, progress, plain-words error, duration and actions.
 * Rows are one tab stop (roving focus): arrows move between them, Delete removes the focused one. The
 * running row is kept in view. With nothing added yet, the first-run steps take its place.
 */
import { useEffect, useRef, useState, type KeyboardEvent } from 'react';
import { useShallow } from 'zustand/react/shallow';
import type { ItemSettings, JobItem, ModelInfo } from '../../../app/service/crispService.js';
import { sizeRequestOf, targetSize, type SizeRequest } from '../../../engine/contract/geometry.js';
import type { Translator } from '../i18n/index.js';
import { credits, dimensions, statusLabel } from '../format.js';
import { itemErrorText } from '../i18n/errorText.js';
import { useT } from '../i18n/useT.js';
import { useActions, useApp, useQueue, useSettings } from '../stores/appContext.js';
import { selectModels } from '../stores/settingsStore.js';
import {
  selectDoneIds,
  selectDuration,
  selectHasClearable,
  selectUnsavedIds,
  selectItems,
  selectRetryable,
  selectShownResult,
} from '../stores/queueStore.js';
import { countStates, countsText, formatDuration } from '../stores/statusModel.js';
import { EmptyState } from './EmptyState.js';
import { dragOutProps, ResultActions } from './ResultActions.js';
import { Thumbnail } from './Thumbnail.js';

function folderOf(p: string): string {
  const i = Math.max(p.lastIndexOf('/'), p.lastIndexOf('\\'));
  return i > 0 ? p.slice(0, i) : p;
}

const FORMAT_NAMES: Record<ItemSettings['format'], string> = { png: 'PNG', jpg: 'JPEG', webp: 'WebP' };

/** An exact size in words: "width 1000 px", "fit in 1920×1080 px". */
function sizeText(size: SizeRequest, tr: Translator): string {
  if (size.longSide !== undefined) return tr.t('made.sizeLongSide', { n: String(size.longSide) });
  if (size.width !== undefined && size.height !== undefined)
    return tr.t('made.sizeBox', { width: String(size.width), height: String(size.height) });
  if (size.width !== undefined) return tr.t('made.sizeWidth', { n: String(size.width) });
  return tr.t('made.sizeHeight', { n: String(size.height ?? 0) });
}

/** "Service Lite · ×2 · denoise 0.50 · faces · PNG": what made a row, so two rows of one image differ in words. */
export function madeWithText(m: ItemSettings, models: readonly ModelInfo[], tr: Translator): string {
  const title = models.find((x) => x.name === m.model)?.title ?? m.model;
  const parts = [
    m.mode === 'cloud' ? tr.t('made.cloud', { model: title }) : title,
    m.size
      ? sizeText(m.size, tr)
      : m.passes === 2
        ? tr.t('made.twice', { scale: m.scale, total: m.scale * m.scale })
        : `×${m.scale}`,
  ];
  if (m.denoise !== undefined)
    parts.push(
      tr.t('made.denoise', { value: tr.num(m.denoise, { minimumFractionDigits: 2, maximumFractionDigits: 2 }) }),
    );
  if (m.face) parts.push(tr.t('made.faces'));
  parts.push(FORMAT_NAMES[m.format]);
  return parts.join(' · ');
}

/** The size a row will get: its exact size, or its input × scale (× scale again with two passes). */
export function plannedDimensions(
  input: { width: number; height: number },
  plan: { scale: number; passes: number; size?: SizeRequest | undefined },
): { width: number; height: number } {
  if (plan.size) return targetSize(input.width, input.height, plan.size);
  const k = plan.scale ** (plan.passes === 2 ? 2 : 1);
  return { width: input.width * k, height: input.height * k };
}

function QueueRow({
  item,
  focused,
  shown,
  onFocus,
}: {
  item: JobItem;
  focused: boolean;
  /** This row's result is the one in the main pane. */
  shown: boolean;
  onFocus: () => void;
}) {
  const { retry, cancelItem, removeItem } = useActions();
  const { queue, desktop } = useApp();
  const seen = useQueue(selectDuration(item.id));
  // The service's own measure first: it is kept with the row, so it survives a reload.
  const duration = item.durationMs ?? seen;
  const models = useSettings(selectModels);
  // Before the run: the size the current settings will make (an exact size, or the scale, twice with two passes).
  const current = useSettings(
    useShallow((s) =>
      s.settings
        ? [s.settings.scale, s.settings.passes, s.settings.width, s.settings.height, s.settings.longSide]
        : null,
    ),
  );
  const planned = current
    ? {
        scale: current[0]!,
        passes: current[1]!,
        size: sizeRequestOf({ width: current[2], height: current[3], longSide: current[4] }),
      }
    : null;
  const plan =
    item.status === 'running' && item.madeWith
      ? { scale: item.madeWith.scale, passes: item.madeWith.passes, size: item.madeWith.size }
      : item.status === 'queued'
        ? planned
        : null;
  const plannedSize = plan && item.inputDimensions ? plannedDimensions(item.inputDimensions, plan) : undefined;
  const name = item.inputName;
  const tr = useT();
  const { t } = tr;
  return (
    <li
      className={`item status-${item.status}${shown ? ' shown' : ''}`}
      aria-current={shown ? 'true' : undefined}
      aria-label={name}
      data-id={item.id}
      tabIndex={focused ? 0 : -1}
      onFocus={(e) => e.target === e.currentTarget && onFocus()}
      {...dragOutProps(item, desktop?.startDrag)}
    >
      {/* Once done, the thumbnail is the result, and a button that shows it in the main pane. */}
      {item.status === 'done' && item.outputPath ? (
        <button
          type="button"
          className="thumb-button"
          aria-label={t('queue.viewNamed', { name })}
          aria-pressed={shown}
          onClick={() => queue.getState().select(item.id)}
        >
          <Thumbnail id={item.id} which="output" version={item.outputPath} alt="" />
        </button>
      ) : (
        <Thumbnail id={item.id} which="input" alt="" />
      )}
      <div className="item-body">
        <div className="item-title">
          {/* A dropped or pasted file's path is Crisp's internal copy (drops/<uuid>/…): only its name is shown. */}
          <span className="item-name" title={item.dropped ? undefined : item.inputPath}>
            {name}
          </span>
          <span className="muted small">
            {dimensions(item.inputDimensions)}
            {item.outputDimensions
              ? ` → ${dimensions(item.outputDimensions)}`
              : plannedSize
                ? ` → ${dimensions(plannedSize)}`
                : ''}
          </span>
        </div>
        {item.madeWith ? (
          <p className="muted small item-made" data-testid="item-made">
            {madeWithText(item.madeWith, models, tr)}
          </p>
        ) : null}
        <div className="item-progress">
          <progress
            aria-label={t('queue.progress', { name })}
            max={100}
            value={item.status === 'done' ? 100 : Math.round(item.percent)}
          />
          <span className="item-status" data-testid="item-status">
            {item.status === 'done' && duration !== null
              ? t('status.doneIn', { duration: formatDuration(duration, tr) })
              : statusLabel(item, tr)}
          </span>
          {item.creditsDeducted ? (
            <span className="muted small">{t('queue.credits', { credits: credits(item.creditsDeducted, tr) })}</span>
          ) : null}
          {item.status === 'done' && item.faces ? (
            <span className="muted small" data-testid="item-faces">
              {item.faces.found === 0
                ? t('queue.noFaces')
                : t('queue.faces', { n: item.faces.found, enhanced: item.faces.enhanced })}
            </span>
          ) : null}
        </div>
        {item.error ? <p className="item-error">{itemErrorText(item, tr)}</p> : null}
        {item.status !== 'done' || !item.outputPath ? null : item.dropped &&
          folderOf(item.outputPath) === folderOf(item.inputPath) ? (
          item.unsaved ? (
            <p className="muted small item-output">{t('queue.keptInApp')}</p>
          ) : null
        ) : (
          <p className="muted small item-output" title={item.outputPath}>
            {t('queue.savedIn', { folder: folderOf(item.outputPath) })}
          </p>
        )}
      </div>
      <div className="item-actions">
        {item.status === 'done' ? (
          <button
            type="button"
            aria-label={t('queue.compareNamed', { name })}
            onClick={() => queue.getState().openCompare(item.id)}
          >
            {t('queue.compare')}
          </button>
        ) : null}
        <ResultActions item={item} />
        {item.status === 'failed' || item.status === 'cancelled' ? (
          <button type="button" aria-label={t('queue.retryNamed', { name })} onClick={() => void retry(item.id)}>
            {t('queue.retry')}
          </button>
        ) : null}
        {item.status === 'queued' || item.status === 'running' ? (
          <button type="button" aria-label={t('queue.cancelNamed', { name })} onClick={() => void cancelItem(item.id)}>
            {t('queue.cancel')}
          </button>
        ) : null}
        {item.status !== 'running' ? (
          <button
            type="button"
            aria-label={t('queue.removeNamed', { name })}
            className="quiet"
            onClick={() => void removeItem(item.id)}
          >
            ✕
          </button>
        ) : null}
      </div>
    </li>
  );
}

/**
 * Clear finished, when some results exist only in Crisp's data folder and were never downloaded: clearing
 * would delete them, so it asks first — download them, clear the rest and keep them, or delete them too.
 */
function ClearConfirm(props: {
  unsavedIds: string[];
  canDownload: boolean;
  onDone: () => void;
  onDownload: () => void;
  onClear: (discardUnsaved: boolean) => void;
}) {
  const { t } = useT();
  const first = useRef<HTMLButtonElement>(null);
  useEffect(() => first.current?.focus(), []);
  const n = props.unsavedIds.length;
  const finish = (work: () => void) => () => {
    work();
    props.onDone();
  };
  return (
    <div
      className="clear-confirm"
      role="alertdialog"
      aria-labelledby="clear-confirm-text"
      onKeyDown={(e) => {
        if (e.key !== 'Escape') return;
        // Escape closes this question; it must not also stop a running batch.
        e.stopPropagation();
        props.onDone();
      }}
    >
      <p id="clear-confirm-text">{t('clear.question', { n })}</p>
      <div className="clear-confirm-buttons">
        {props.canDownload ? (
          <button type="button" ref={first} onClick={finish(props.onDownload)}>
            {t('clear.download', { n })}
          </button>
        ) : null}
        <button type="button" ref={props.canDownload ? undefined : first} onClick={finish(() => props.onClear(false))}>
          {t('clear.keep', { n })}
        </button>
        <button type="button" className="danger" onClick={finish(() => props.onClear(true))}>
          {t('clear.delete', { n })}
        </button>
        <button type="button" className="quiet" onClick={props.onDone}>
          {t('clear.cancel')}
        </button>
      </div>
    </div>
  );
}

export function QueueView() {
  const items = useQueue(useShallow(selectItems));
  const hasClearable = useQueue(selectHasClearable);
  const unsavedIds = useQueue(useShallow(selectUnsavedIds));
  const [confirmClear, setConfirmClear] = useState(false);
  const retryable = useQueue(selectRetryable);
  const doneIds = useQueue(useShallow(selectDoneIds));
  const shownId = useQueue((s) => selectShownResult(s)?.id ?? null);
  const { browser } = useApp();
  const { clearFinished, retry, removeItem, download } = useActions();
  const list = useRef<HTMLUListElement>(null);
  const [focusedId, setFocusedId] = useState<string | null>(null);
  const tr = useT();
  const { t } = tr;
  const counts = countStates(items);
  const runningId = items.find((i) => i.status === 'running')?.id;

  // With many images, the running one stays in view.
  useEffect(() => {
    if (!runningId) return;
    list.current
      ?.querySelector<HTMLElement>(`[data-id="${CSS.escape(runningId)}"]`)
      ?.scrollIntoView?.({ block: 'nearest' });
  }, [runningId]);

  const focusRow = (index: number) => {
    const rows = list.current?.querySelectorAll<HTMLElement>(':scope > li');
    const row = rows?.[Math.max(0, Math.min((rows?.length ?? 1) - 1, index))];
    row?.focus();
  };
  const onListKey = (e: KeyboardEvent<HTMLUListElement>) => {
    const row = (e.target as HTMLElement).closest('li');
    if (!row || row !== e.target) return;
    const index = items.findIndex((i) => i.id === row.dataset.id);
    const moves: Record<string, number> = { ArrowDown: index + 1, ArrowUp: index - 1, Home: 0, End: items.length - 1 };
    if (e.key in moves) {
      e.preventDefault();
      focusRow(moves[e.key] ?? 0);
    } else if (e.key === 'Delete' || e.key === 'Backspace') {
      const item = items[index];
      if (!item || item.status === 'running') return;
      e.preventDefault();
      void removeItem(item.id).then(() => focusRow(index));
    }
  };
  const activeId = items.some((i) => i.id === focusedId) ? focusedId : (items[0]?.id ?? null);

  return (
    <section aria-label={t('queue.title')} className="queue">
      <div className="queue-head">
        <h2>{t('queue.title')}</h2>
        <span className="muted small" data-testid="queue-counts">
          {items.length ? countsText(counts, tr) : t('queue.empty')}
        </span>
        <span className="spacer" />
        {retryable ? (
          <button type="button" onClick={() => void retry()}>
            {t('queue.retryAll', { n: retryable })}
          </button>
        ) : null}
        {browser && doneIds.length > 1 ? (
          <button type="button" onClick={() => void download(doneIds)}>
            {t('queue.downloadAll', { n: doneIds.length })}
          </button>
        ) : null}
        <button
          type="button"
          disabled={!hasClearable}
          aria-expanded={unsavedIds.length > 0 ? confirmClear : undefined}
          onClick={() => (unsavedIds.length > 0 ? setConfirmClear(true) : void clearFinished())}
        >
          {t('queue.clearFinished')}
        </button>
      </div>
      {confirmClear && unsavedIds.length > 0 ? (
        <ClearConfirm
          unsavedIds={unsavedIds}
          canDownload={!!browser}
          onDone={() => setConfirmClear(false)}
          onDownload={() => void download(unsavedIds)}
          onClear={(discardUnsaved) => void clearFinished({ discardUnsaved })}
        />
      ) : null}
      {items.length === 0 ? (
        <EmptyState />
      ) : (
        <ul className="items" ref={list} onKeyDown={onListKey} aria-label={t('queue.images')}>
          {items.map((item) => (
            <QueueRow
              key={item.id}
              item={item}
              focused={item.id === activeId}
              shown={item.id === shownId}
              onFocus={() => setFocusedId(item.id)}
            />
          ))}
        </ul>
      )}
    </section>
  );
}
