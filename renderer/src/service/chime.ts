/**
 * The optional end-of-batch sound: two short tones made with Web Audio (no audio file to ship or to
 * allow in the CSP). The choice is a preference of this window, kept in localStorage.
 */
const KEY = 'crisp-sound';

export const soundEnabled = (): boolean => typeof localStorage !== 'undefined' && localStorage.getItem(KEY) === 'on';
export const setSoundEnabled = (on: boolean): void => localStorage.setItem(KEY, on ? 'on' : 'off');

export function chime(): void {
  const Ctx = (globalThis as { AudioContext?: typeof AudioContext }).AudioContext;
  if (!Ctx) return;
  const ctx = new Ctx();
  const now = ctx.currentTime;
  [660, 880].forEach((freq, i) => {
    const osc = ctx.createOscillator();
    const gain = ctx.createGain();
    osc.frequency.value = freq;
    gain.gain.setValueAtTime(0.0001, now + i * 0.15);
    gain.gain.exponentialRampToValueAtTime(0.2, now + i * 0.15 + 0.02);
    gain.gain.exponentialRampToValueAtTime(0.0001, now + i * 0.15 + 0.14);
    osc.connect(gain).connect(ctx.destination);
    osc.start(now + i * 0.15);
    osc.stop(now + i * 0.15 + 0.15);
  });
  setTimeout(() => void ctx.close(), 600);
}
