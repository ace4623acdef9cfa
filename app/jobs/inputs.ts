/**
 * Expands what the person added (files and folders, optionally recursive) into image files. Folders keep
 * only supported images, identified by their bytes (JPG, PNG, WEBP), never by their extension.
 * Every filesystem step on these user-given paths has a deadline (a dead network mount, a path under /proc),
 * and only regular files are opened: opening a named pipe would wait for a writer forever.
 */
import { open, readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import type { InputMimeType } from '../../engine/contract/index.js';
import { sniffImageType } from '../../engine/core/index.js';
import { guardStep } from './userErrors.js';

/** Per filesystem step while adding images. */
export const INPUT_STEP_TIMEOUT_MS = 5_000;

const guarded = <T>(step: Promise<T>, what: string) => guardStep(step, { timeoutMs: INPUT_STEP_TIMEOUT_MS, what });

export async function sniffFile(file: string): Promise<InputMimeType | undefined> {
  try {
    const fh = await guarded(open(file, 'r'), `Opening ${file}`);
    try {
      const head = new Uint8Array(16);
      const { bytesRead } = await guarded(fh.read(head, 0, head.length, 0), `Reading ${file}`);
      return sniffImageType(head.subarray(0, bytesRead));
    } finally {
      await fh.close();
    }
  } catch {
    return undefined;
  }
}

export interface ExpandedInput {
  path: string;
  /** Set for an explicitly named file that is not a supported image (folders drop those silently). */
  problem?: string;
  /** The problem's stable code (app/jobs/userErrors.ts). */
  problemCode?: 'not-found' | 'not-an-image' | 'timed-out';
}

export async function expandInputs(paths: string[], recursive: boolean): Promise<ExpandedInput[]> {
  const out: ExpandedInput[] = [];
  const walk = async (dir: string, depth: number): Promise<void> => {
    const entries = await guarded(readdir(dir, { withFileTypes: true }), `Listing ${dir}`).catch(() => []);
    entries.sort((a, b) => a.name.localeCompare(b.name, undefined, { numeric: true }));
    for (const e of entries) {
      // Hidden files include our own temp files (".name.xxxx.tmp") from an interrupted write.
      if (e.name.startsWith('.')) continue;
      const p = path.join(dir, e.name);
      if (e.isDirectory()) {
        if (recursive && depth < 32) await walk(p, depth + 1);
      } else if (e.isFile() && (await sniffFile(p))) {
        out.push({ path: p });
      }
    }
  };
  for (const raw of paths) {
    const p = path.resolve(raw);
    let timedOut = false;
    const st = await guarded(stat(p), `Checking ${p}`).catch((e: unknown) => {
      timedOut = (e as { code?: string }).code === 'timed-out';
      return undefined;
    });
    if (timedOut)
      out.push({
        path: p,
        problem: `${path.basename(p)} did not answer within ${INPUT_STEP_TIMEOUT_MS / 1000} s (the disk or network share may be unresponsive).`,
        problemCode: 'timed-out',
      });
    else if (!st) out.push({ path: p, problem: `${path.basename(p)} does not exist.`, problemCode: 'not-found' });
    else if (st.isDirectory()) await walk(p, 0);
    else if (st.isFile() && (await sniffFile(p))) out.push({ path: p });
    else
      out.push({
        path: p,
        problem: `${path.basename(p)} is not a JPG, PNG or WEBP image.`,
        problemCode: 'not-an-image',
      });
  }
  return out;
}
