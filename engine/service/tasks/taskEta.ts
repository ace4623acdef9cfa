/**
 * A task's remaining seconds from the current image's ETA: images after the current one are assumed to take as
 * long as this one (its elapsed + remaining time). Always a finite whole number of seconds, or undefined when
 * nothing sensible can be said: the status answer's schema takes an integer, and a NaN there once turned a status
 * poll into a 500 (the last image's final progress event, fraction 1 with an ETA, divided by 1 − 1).
 */
export function taskEtaSeconds(fraction: number, imageEtaSeconds: number, imageCount: number): number | undefined {
  if (!Number.isFinite(fraction) || !Number.isFinite(imageEtaSeconds) || imageCount < 1) return undefined;
  const n = Math.floor(imageCount);
  const done = Math.min(n, Math.max(0, fraction * n));
  const i = Math.min(n - 1, Math.floor(done));
  const current = done - i; // of the current image, 0..1
  const later = n - 1 - i;
  const perImage = later > 0 && current > 0.02 && current < 1 ? imageEtaSeconds / (1 - current) : imageEtaSeconds;
  const eta = Math.round(Math.max(0, imageEtaSeconds) + Math.max(0, perImage) * later);
  return Number.isFinite(eta) ? eta : undefined;
}
