/**
 * Where an output goes under the overwrite policy: skip (keep the existing file, the item is skipped),
 * replace, or keep both (`-2`, `-3`… as the engine numbers a batch's duplicates). The name itself comes
 * from the one namer, engine/service/tasks/outputNames.ts.
 */
import { stat } from 'node:fs/promises';
import path from 'node:path';
import { numberedName } from '../../engine/service/index.js';
import type { OverwritePolicy } from '../settings/upscaleOptions.js';

const exists = async (p: string) => (await stat(p).catch(() => undefined)) !== undefined;

export type OutputDecision = { action: 'write'; path: string } | { action: 'skip'; path: string };

export async function decideOutput(
  dir: string,
  fileName: string,
  policy: OverwritePolicy,
  reserved: ReadonlySet<string> = new Set(),
): Promise<OutputDecision> {
  const first = path.join(dir, fileName);
  const taken = async (p: string) => reserved.has(p) || (await exists(p));
  if (policy === 'replace' || !(await taken(first))) return { action: 'write', path: first };
  if (policy === 'skip') return { action: 'skip', path: first };
  for (let n = 2; ; n++) {
    const p = path.join(dir, numberedName(fileName, n));
    if (!(await taken(p))) return { action: 'write', path: p };
  }
}
