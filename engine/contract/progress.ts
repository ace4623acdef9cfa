/** progress is a string "N%", N an integer 0–100, never decreasing, "100%" exactly when PROCESSED. */
export function formatProgress(fraction: number): string {
  const n = Math.max(0, Math.min(100, Math.floor(fraction * 100)));
  return `${n}%`;
}

export function parseProgress(progress: string): number {
  const m = /^(\d{1,3})%$/.exec(progress);
  return m ? Number(m[1]) : 0;
}
