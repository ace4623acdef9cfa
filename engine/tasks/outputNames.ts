/** Output names say what was done: `photo_service-lite-4x_x4.png`; batch duplicates get `-2`, `-3`. */
import path from 'node:path';
import type { TaskSettings } from '../contract/index.js';

/** Characters Windows, macOS or Linux refuse in a file name, plus control characters. */
// eslint-disable-next-line no-control-regex
const UNSAFE = /[<>:"/\\|?*\u0000-\u001f\u007f]/g;

export function outputBaseName(originalFileName: string): string {
  const base = path.parse(originalFileName).name.replace(UNSAFE, '_').trim();
  return (base === '' || base.startsWith('.') ? `image${base}` : base).slice(0, 150);
}

/**
 * `custom:anime` → `custom-anime` (':' is not allowed in Windows file names); a denoise strength is part of
 * the name (`service-lite-4x-dn0.5`) so outputs made at different strengths never overwrite each other.
 */
export function outputModelLabel(settings: Pick<TaskSettings, 'model' | 'denoise'>): string {
  const model = settings.model.replace(UNSAFE, '-');
  return settings.denoise === undefined ? model : `${model}-dn${settings.denoise}`;
}

export function outputFileName(originalFileName: string, settings: TaskSettings, taken: ReadonlySet<string>): string {
  const stem = `${outputBaseName(originalFileName)}_${outputModelLabel(settings)}_x${settings.scale}`;
  let name = `${stem}.${settings.saveImageAs}`;
  for (let n = 2; taken.has(name); n++) name = `${stem}-${n}.${settings.saveImageAs}`;
  return name;
}
