/**
 * Before/after of a finished item, used docked in the main pane (ResultPane) and full-window
 * (CompareDialog). Both images are drawn in the same box (the input stretched to the output's size,
 * pixelated so the difference is honest) under one shared zoom/pan transform; the "before" layer is
 * clipped at the divider. The divider is a real slider ("Compare") for keyboards. Zoom has a separate
 * Fit and a real 1:1 (one image pixel per device pixel, see zoomMath.ts); the label shows that real scale.
 * Controls at a limit are aria-disabled, never disabled: a disabled button drops the keyboard focus to
 * the page behind, and with it Escape.
 */
import {
  useEffect,
  useLayoutEffect,
  useRef,
  useState,
  type KeyboardEvent,
  type PointerEvent,
  type ReactNode,
  type RefObject,
  type WheelEvent,
} from 'react';
import type { JobItem } from '../../../app/service/crispService.js';
import { dimensions } from '../format.js';
import { useT } from '../i18n/useT.js';
import { useApp } from '../stores/appContext.js';
import { bounded, clamp, FIT, oneToOneZoom, realPercent, zoomLimits, zoomTo, type View } from './zoomMath.js';

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

/** The box's CSS size, kept current (window resizes change what 1:1 means relative to Fit). */
function useBoxSize(box: RefObject<HTMLDivElement | null>): { w: number; h: number } {
  const [size, setSize] = useState({ w: 1, h: 1 });
  useLayoutEffect(() => {
    const el = box.current;
    if (!el) return;
    const read = () => {
      const r = el.getBoundingClientRect();
      setSize((s) => (s.w === r.width && s.h === r.height ? s : { w: r.width || 1, h: r.height || 1 }));
    };
    read();
    if (typeof ResizeObserver === 'undefined') return;
    const ro = new ResizeObserver(read);
    ro.observe(el);
    return () => ro.disconnect();
  }, [box]);
  return size;
}

export interface CompareViewProps {
  item: JobItem;
  /** Docked in the main pane (a region) rather than inside the modal dialog. */
  docked?: boolean;
  /** The heading level's element id, for the surrounding region or dialog to be labelled by. */
  titleId?: string;
  /** Buttons after the zoom controls (Close in the dialog, Full window when docked). */
  extra?: ReactNode;
  /** Anything before the zoom controls (the result actions). */
  actions?: ReactNode;
  /** The slider is focused on mount (the dialog); docked views never take the focus. */
  autoFocus?: boolean;
}

export function CompareView({ item, docked = false, titleId, extra, actions, autoFocus = false }: CompareViewProps) {
  const before = useImageUrl(item.id, 'input', item.inputPath);
  const after = useImageUrl(item.id, 'output', item.outputPath ?? '');
  const [pos, setPos] = useState(50);
  const { t, percent } = useT();
  const [view, setView] = useState<View>(FIT);
  const viewport = useRef<HTMLDivElement>(null);
  const frameRef = useRef<HTMLDivElement>(null);
  const sizer = useRef<HTMLDivElement>(null);
  const slider = useRef<HTMLDivElement>(null);
  const drag = useRef<{ kind: 'divider' | 'pan'; startX: number; startY: number; view: View } | null>(null);
  // The frame is the pane's width; the sizer inside it is the fitted image (Fit). At Fit and below the view is
  // the fitted box; zoomed in, it takes the whole frame, so a portrait result is not seen through a slot.
  const frame = useBoxSize(frameRef);
  const fit = useBoxSize(sizer);
  const out = item.outputDimensions;
  const dpr = typeof window !== 'undefined' ? window.devicePixelRatio || 1 : 1;
  const oneToOne = out ? oneToOneZoom(out.width, fit.w, dpr) : 1;
  const limits = zoomLimits(oneToOne);
  const zoomed = view.zoom > 1 + 1e-9;
  // Views are kept relative to the fitted box (Fit is x = y = 0); the frame's arithmetic is offset by its margin.
  const ox = Math.max(0, (frame.w - fit.w) / 2);
  const inFrame = (v: View): View => ({ ...v, x: v.x + ox });
  const fromFrame = (v: View): View => ({ ...v, x: v.x - ox });
  const bound = (v: View) => fromFrame(bounded(inFrame(v), frame.w, fit.h, fit.w, fit.h));

  // A different item starts at Fit, divider in the middle.
  useEffect(() => {
    setView(FIT);
    setPos(50);
  }, [item.id, item.outputPath]);
  useEffect(() => {
    if (autoFocus) slider.current?.focus();
  }, [autoFocus]);

  /** The frame's top-left on screen: pointer positions for zooming are taken in the frame. */
  const origin = () => {
    const r = frameRef.current?.getBoundingClientRect();
    return { left: r?.left ?? 0, top: r?.top ?? 0 };
  };
  const zoomAt = (v: View, zoom: number, cx?: number, cy?: number) =>
    fromFrame(zoomTo(inFrame(v), zoom, frame.w, fit.h, limits, cx ?? frame.w / 2, cy ?? fit.h / 2, fit.w, fit.h));
  const zoomBy = (factor: number, cx?: number, cy?: number) => setView((v) => zoomAt(v, v.zoom * factor, cx, cy));
  const setZoom = (zoom: number) => setView((v) => zoomAt(v, zoom));
  const fitView = () => setView(FIT);
  // The divider is a share of the visible view (the fitted box, or the whole frame when zoomed in).
  const dividerFromClientX = (clientX: number) => {
    const r = viewport.current?.getBoundingClientRect();
    if (r && r.width > 0) setPos(clamp(((clientX - r.left) / r.width) * 100, 0, 100));
  };

  const onPointerDown = (e: PointerEvent<HTMLDivElement>) => {
    const onHandle = (e.target as HTMLElement).closest('.divider');
    const kind = onHandle || view.zoom <= 1 ? 'divider' : 'pan';
    drag.current = { kind, startX: e.clientX, startY: e.clientY, view };
    e.currentTarget.setPointerCapture?.(e.pointerId);
    if (kind === 'divider') dividerFromClientX(e.clientX);
  };
  const onPointerMove = (e: PointerEvent<HTMLDivElement>) => {
    const d = drag.current;
    if (!d) return;
    if (d.kind === 'divider') dividerFromClientX(e.clientX);
    else setView(bound({ zoom: d.view.zoom, x: d.view.x + e.clientX - d.startX, y: d.view.y + e.clientY - d.startY }));
  };
  const onWheel = (e: WheelEvent<HTMLDivElement>) => {
    const { left, top } = origin();
    zoomBy(e.deltaY < 0 ? 1.25 : 0.8, e.clientX - left, e.clientY - top);
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
    setView((v) => bound({ zoom: v.zoom, x: v.x + m[0], y: v.y + m[1] }));
  };
  /** + − 0 (Fit) and 1 (1:1) anywhere in the view; typing in a field is never taken. */
  const onKey = (e: KeyboardEvent<HTMLDivElement>) => {
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    if (e.key === '+' || e.key === '=') zoomBy(1.25);
    else if (e.key === '-') zoomBy(0.8);
    else if (e.key === '0') fitView();
    else if (e.key === '1') setZoom(oneToOne);
    else return;
    e.preventDefault();
  };

  const atMin = view.zoom <= limits.min + 1e-9;
  const atMax = view.zoom >= limits.max - 1e-9;
  const isFit = view.zoom === 1 && view.x === 0 && view.y === 0;
  const isOneToOne = Math.abs(view.zoom - oneToOne) < 1e-6;
  const real = realPercent(view.zoom, oneToOne);
  // The layer is the fitted image's size, placed in the view (which starts at the frame's edge when zoomed in).
  const transform = `translate(${view.x + (zoomed ? ox : 0)}px, ${view.y}px) scale(${view.zoom})`;
  // At Fit and below, the view and its layers are sized by CSS alone (the sizer's own expression), so a window
  // resized narrower never shows last frame's measured width; zoomed in, the layer is the measured fitted size.
  const layerSize = zoomed
    ? { width: `${fit.w}px`, height: `${fit.h}px`, right: 'auto', bottom: 'auto' }
    : { width: '100%', height: '100%' };
  const fittedWidth = out ? `min(100%, calc(var(--viewport-height) * ${out.width} / ${out.height}))` : '100%';
  // Past 1:1 the upscaled pixels are shown as the squares they are, not smoothed by the browser.
  const afterClass = real > 100.5 ? 'pixelated' : undefined;
  const guard = (enabled: boolean, run: () => void) => () => (enabled ? run() : undefined);
  return (
    <div className={docked ? 'compare-view docked' : 'compare-view'} onKeyDown={onKey}>
      <div className="compare-head">
        <h2 id={titleId} className="compare-title" title={item.inputName}>
          {item.inputName}
        </h2>
        <span className="muted small">
          {dimensions(item.inputDimensions)} → {dimensions(out)}
        </span>
        <span className="spacer" />
        {actions}
        <span className="zoom-controls">
          <button
            type="button"
            aria-label={t('compare.zoomOut')}
            aria-disabled={atMin}
            onClick={guard(!atMin, () => zoomBy(0.8))}
          >
            −
          </button>
          <span className="zoom-label" aria-live="polite" data-testid="zoom-label">
            {percent(real)}
          </span>
          <button
            type="button"
            aria-label={t('compare.zoomIn')}
            aria-disabled={atMax}
            onClick={guard(!atMax, () => zoomBy(1.25))}
          >
            +
          </button>
          <button
            type="button"
            aria-label={t('compare.oneToOneLabel')}
            aria-pressed={isOneToOne}
            aria-keyshortcuts="1"
            onClick={() => setZoom(oneToOne)}
          >
            {t('compare.oneToOne')}
          </button>
          <button type="button" aria-pressed={isFit} aria-keyshortcuts="0" onClick={fitView}>
            {t('compare.fit')}
          </button>
        </span>
        {extra}
      </div>
      <div ref={frameRef} className="viewport-frame">
        <div
          ref={sizer}
          className="viewport-sizer"
          aria-hidden="true"
          // The fitted box keeps the output's aspect ratio even when the height limit is what binds.
          style={
            out
              ? {
                  aspectRatio: `${out.width} / ${out.height}`,
                  width: fittedWidth,
                }
              : undefined
          }
        />
        <div
          ref={viewport}
          className={zoomed ? 'viewport zoomed' : 'viewport'}
          style={zoomed ? { left: 0, width: '100%' } : { left: 0, right: 0, marginInline: 'auto', width: fittedWidth }}
          tabIndex={0}
          aria-label={t('compare.viewport')}
          onPointerDown={onPointerDown}
          onPointerMove={onPointerMove}
          onPointerUp={() => (drag.current = null)}
          onPointerCancel={() => (drag.current = null)}
          onWheel={onWheel}
          onKeyDown={onViewportKey}
        >
          <div className="layer" style={{ ...layerSize, transform }}>
            {after ? (
              <img
                src={after}
                alt={t('compare.afterAlt', { name: item.inputName })}
                className={afterClass}
                draggable={false}
                data-testid="after-image"
              />
            ) : null}
          </div>
          <div className="layer clip" style={{ clipPath: `inset(0 ${100 - pos}% 0 0)` }}>
            <div className="layer" style={{ ...layerSize, transform }}>
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
