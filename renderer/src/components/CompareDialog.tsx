/**
 * Before/after of a finished item. Both images are drawn in the same box (the input stretched to the
 * output's size, pixelated so the difference is honest) under one shared zoom/pan transform; the
 * "before" layer is clipped at the divider. The divider is a real slider ("Compare") for keyboards.
 */
import { useEffect, useRef, useState, type KeyboardEvent, type PointerEvent, type WheelEvent } from 'react';
import type { JobItem } from '../../../app/service/crispService.js';
import { dimensions } from '../format.js';
import { useT } from '../i18n/useT.js';
import { useApp } from '../stores/appContext.js';
import { ResultActions } from './ResultActions.js';

const MIN_ZOOM = 1;
const MAX_ZOOM = 16;
const clamp = (v: number, lo: number, hi: number) => Math.min(hi, Math.max(lo, v));

interface View {
  zoom: number;
  x: number;
  y: number;
}

function useImageUrl(id: string, which: 'input' | 'output', version: string): string | null {
  const { images } = useApp();
  const [url, setUrl] = useState<string | null>(null);
  useEffect(() => {
    let live = true;
    images.url(id, which, version).then(
      (u) => live && setUrl(u),
      () => live && setUrl(null),
    );
    return () => {
      live = false;
    };
  }, [images, id, which, version]);
  return url;
}

export function CompareDialog({ item, onClose }: { item: JobItem; onClose: () => void }) {
  const before = useImageUrl(item.id, 'input', item.inputPath);
  const after = useImageUrl(item.id, 'output', item.outputPath ?? '');
  const [pos, setPos] = useState(50);
  const { t, percent } = useT();
  const [view, setView] = useState<View>({ zoom: 1, x: 0, y: 0 });
  const viewport = useRef<HTMLDivElement>(null);
  const slider = useRef<HTMLDivElement>(null);
  const dialog = useRef<HTMLDivElement>(null);
  const drag = useRef<{ kind: 'divider' | 'pan'; startX: number; startY: number; view: View } | null>(null);

  useEffect(() => {
    const opener = document.activeElement as HTMLElement | null;
    slider.current?.focus();
    return () => opener?.focus?.();
  }, []);

  const size = () => {
    const r = viewport.current?.getBoundingClientRect();
    return { w: r?.width || 1, h: r?.height || 1, left: r?.left ?? 0, top: r?.top ?? 0 };
  };
  // Keeps the zoomed image covering the viewport: no empty margins while panning.
  const bounded = (v: View): View => {
    const { w, h } = size();
    return { zoom: v.zoom, x: clamp(v.x, w - w * v.zoom, 0), y: clamp(v.y, h - h * v.zoom, 0) };
  };
  const zoomAt = (factor: number, px?: number, py?: number) =>
    setView((v) => {
      const { w, h } = size();
      const zoom = clamp(v.zoom * factor, MIN_ZOOM, MAX_ZOOM);
      const cx = px ?? w / 2;
      const cy = py ?? h / 2;
      const k = zoom / v.zoom;
      return bounded({ zoom, x: cx - (cx - v.x) * k, y: cy - (cy - v.y) * k });
    });
  const dividerFromClientX = (clientX: number) => {
    const { w, left } = size();
    setPos(clamp(((clientX - left) / w) * 100, 0, 100));
  };

  const onPointerDown = (e: PointerEvent<HTMLDivElement>) => {
    const onHandle = (e.target as HTMLElement).closest('.divider');
    const kind = onHandle || view.zoom === 1 ? 'divider' : 'pan';
    drag.current = { kind, startX: e.clientX, startY: e.clientY, view };
    e.currentTarget.setPointerCapture?.(e.pointerId);
    if (kind === 'divider') dividerFromClientX(e.clientX);
  };
  const onPointerMove = (e: PointerEvent<HTMLDivElement>) => {
    const d = drag.current;
    if (!d) return;
    if (d.kind === 'divider') dividerFromClientX(e.clientX);
    else
      setView(bounded({ zoom: d.view.zoom, x: d.view.x + e.clientX - d.startX, y: d.view.y + e.clientY - d.startY }));
  };
  const onWheel = (e: WheelEvent<HTMLDivElement>) => {
    const { left, top } = size();
    zoomAt(e.deltaY < 0 ? 1.25 : 0.8, e.clientX - left, e.clientY - top);
  };

  const onSliderKey = (e: KeyboardEvent<HTMLDivElement>) => {
    const step = e.shiftKey ? 10 : 2;
    const next: Record<string, number> = {
      ArrowLeft: pos - step,
      ArrowDown: pos - step,
      ArrowRight: pos + step,
      ArrowUp: pos + step,
      Home: 0,
      End: 100,
      PageDown: pos - 10,
      PageUp: pos + 10,
    };
    const value = next[e.key];
    if (value === undefined) return;
    e.preventDefault();
    e.stopPropagation();
    setPos(clamp(value, 0, 100));
  };
  const onViewportKey = (e: KeyboardEvent<HTMLDivElement>) => {
    const d = e.shiftKey ? 100 : 25;
    const moves: Record<string, [number, number]> = {
      ArrowLeft: [d, 0],
      ArrowRight: [-d, 0],
      ArrowUp: [0, d],
      ArrowDown: [0, -d],
    };
    const m = moves[e.key];
    if (!m) return;
    e.preventDefault();
    setView((v) => bounded({ zoom: v.zoom, x: v.x + m[0], y: v.y + m[1] }));
  };
  const onDialogKey = (e: KeyboardEvent<HTMLDivElement>) => {
    if (e.key === 'Escape') {
      e.preventDefault();
      onClose();
    } else if (e.key === '+' || e.key === '=') zoomAt(1.25);
    else if (e.key === '-') zoomAt(0.8);
    else if (e.key === '0') setView({ zoom: 1, x: 0, y: 0 });
    else if (e.key === 'Tab') {
      // Keep focus inside the modal dialog.
      const focusables = [...(dialog.current?.querySelectorAll<HTMLElement>('button, [tabindex="0"]') ?? [])];
      const first = focusables[0];
      const last = focusables[focusables.length - 1];
      if (e.shiftKey && document.activeElement === first) {
        e.preventDefault();
        last?.focus();
      } else if (!e.shiftKey && document.activeElement === last) {
        e.preventDefault();
        first?.focus();
      }
    }
  };

  const out = item.outputDimensions;
  const transform = `translate(${view.x}px, ${view.y}px) scale(${view.zoom})`;
  return (
    <div className="backdrop" onPointerDown={(e) => e.target === e.currentTarget && onClose()}>
      <div
        ref={dialog}
        role="dialog"
        aria-modal="true"
        aria-label={t('compare.label', { name: item.inputName })}
        className="compare"
        onKeyDown={onDialogKey}
      >
        <div className="compare-head">
          <h2>{item.inputName}</h2>
          <span className="muted small">
            {dimensions(item.inputDimensions)} → {dimensions(out)}
          </span>
          <span className="spacer" />
          <ResultActions item={item} />
          <button
            type="button"
            aria-label={t('compare.zoomOut')}
            onClick={() => zoomAt(0.8)}
            disabled={view.zoom <= MIN_ZOOM}
          >
            −
          </button>
          <span className="zoom-label" aria-live="polite">
            {percent(view.zoom * 100)}
          </span>
          <button
            type="button"
            aria-label={t('compare.zoomIn')}
            onClick={() => zoomAt(1.25)}
            disabled={view.zoom >= MAX_ZOOM}
          >
            +
          </button>
          <button type="button" onClick={() => setView({ zoom: 1, x: 0, y: 0 })}>
            {t('compare.fit')}
          </button>
          <button type="button" aria-label={t('compare.closeLabel')} onClick={onClose}>
            {t('compare.close')}
          </button>
        </div>
        <div
          ref={viewport}
          className={view.zoom > 1 ? 'viewport zoomed' : 'viewport'}
          // The box keeps the output's aspect ratio even when the height limit is what binds.
          style={
            out
              ? {
                  aspectRatio: `${out.width} / ${out.height}`,
                  width: `min(100%, calc(75vh * ${out.width} / ${out.height}))`,
                }
              : undefined
          }
          tabIndex={0}
          aria-label={t('compare.viewport')}
          onPointerDown={onPointerDown}
          onPointerMove={onPointerMove}
          onPointerUp={() => (drag.current = null)}
          onPointerCancel={() => (drag.current = null)}
          onWheel={onWheel}
          onKeyDown={onViewportKey}
        >
          <div className="layer" style={{ transform }}>
            {after ? <img src={after} alt={t('compare.afterAlt', { name: item.inputName })} draggable={false} /> : null}
          </div>
          <div className="layer clip" style={{ clipPath: `inset(0 ${100 - pos}% 0 0)` }}>
            <div className="layer" style={{ transform }}>
              {before ? (
                <img
                  src={before}
                  alt={t('compare.beforeAlt', { name: item.inputName })}
                  className="pixelated"
                  draggable={false}
                />
              ) : null}
            </div>
          </div>
          <span className="tag left">{t('compare.before')}</span>
          <span className="tag right">{t('compare.after')}</span>
          <div className="divider" style={{ left: `${pos}%` }}>
            <div
              ref={slider}
              role="slider"
              tabIndex={0}
              aria-label={t('compare.slider')}
              aria-valuemin={0}
              aria-valuemax={100}
              aria-valuenow={Math.round(pos)}
              aria-valuetext={t('compare.sliderValue', { percent: percent(pos) })}
              className="handle"
              onKeyDown={onSliderKey}
            />
          </div>
        </div>
      </div>
    </div>
  );
}
