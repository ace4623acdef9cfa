/**
 * The comparison's zoom, as pure arithmetic. `zoom` is relative to the fitted box (1 = Fit). A real 1:1
 * shows one image pixel on one *device* pixel, so it depends on the box's CSS width and the screen's
 * devicePixelRatio: an image 2000 px wide in a 500 CSS px box on a 2× screen is at 1:1 at zoom 2000/2/500 = 2.
 */

export interface View {
  zoom: number;
  x: number;
  y: number;
}

export const FIT: View = { zoom: 1, x: 0, y: 0 };

/** Never closer than 16× the fitted view, and always at least 4× past 1:1 so small images can be inspected. */
const MAX_FIT_ZOOM = 16;
const MAX_PAST_ONE_TO_ONE = 4;

export const clamp = (v: number, lo: number, hi: number) => Math.min(hi, Math.max(lo, v));

/** The zoom (relative to Fit) at which one image pixel covers one device pixel. */
export function oneToOneZoom(imageWidth: number, boxCssWidth: number, devicePixelRatio: number): number {
  if (!(imageWidth > 0) || !(boxCssWidth > 0)) return 1;
  return imageWidth / (devicePixelRatio > 0 ? devicePixelRatio : 1) / boxCssWidth;
}

export interface ZoomLimits {
  min: number;
  max: number;
}

/** Fit and 1:1 are always both reachable: an image smaller than its box zooms out to 1:1. */
export function zoomLimits(oneToOne: number): ZoomLimits {
  return { min: Math.min(1, oneToOne), max: Math.max(MAX_FIT_ZOOM, oneToOne * MAX_PAST_ONE_TO_ONE) };
}

/** Image pixels per device pixel, as a percentage (100 = 1:1), for the zoom label. */
export function realPercent(zoom: number, oneToOne: number): number {
  return (zoom / oneToOne) * 100;
}

/**
 * Keeps a zoomed-in image covering the box (no empty margins while panning); on an axis where the image is
 * smaller than the box it is centred instead. The box is w × h; the fitted image iw × ih (Fit), by default the
 * box itself — a zoomed view may use a box wider than the fitted image (a portrait result in a wide pane).
 */
export function bounded(v: View, w: number, h: number, iw = w, ih = h): View {
  const axis = (pos: number, size: number, image: number) =>
    image * v.zoom >= size ? clamp(pos, size - image * v.zoom, 0) : (size - image * v.zoom) / 2;
  return { zoom: v.zoom, x: axis(v.x, w, iw), y: axis(v.y, h, ih) };
}

/** Zooms to `zoom` keeping the point (cx, cy) of the box where it is (the pointer, or the centre). */
export function zoomTo(
  v: View,
  zoom: number,
  w: number,
  h: number,
  limits: ZoomLimits,
  cx = w / 2,
  cy = h / 2,
  iw = w,
  ih = h,
): View {
  const z = clamp(zoom, limits.min, limits.max);
  const k = z / v.zoom;
  return bounded({ zoom: z, x: cx - (cx - v.x) * k, y: cy - (cy - v.y) * k }, w, h, iw, ih);
}
