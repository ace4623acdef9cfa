/**
 * The output folder is made ready before any inference: created with its parents, checked to be a folder,
 * and proven writable by creating (and removing) a probe file — permission bits lie (root, ACLs, read-only
 * mounts, /proc). Each step races the cancel signal and a timeout, because some paths never answer: Node's
 * recursive mkdir spins forever under /proc, so folders are created one level at a time instead.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, open, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { CrispError, isCrispError } from '../../engine/contract/index.js';
import { guardStep, toUserError } from './userErrors.js';

export interface FolderCheckOptions {
  signal?: AbortSignal | undefined;
  /** Per filesystem step (default 10 s). */
  timeoutMs?: number;
  /** How the folder is named in messages (default: the path as given). */
  label?: string;
}

const DEFAULT_STEP_TIMEOUT_MS = 10_000;

/** Creates `dir` (and missing parents) and proves it writable; throws a CrispError naming `dir`. */
export async function prepareOutputFolder(dir: string, opts: FolderCheckOptions = {}): Promise<void> {
  const label = opts.label ?? dir;
  const guard = <T>(p: Promise<T>, what: string) =>
    guardStep(p, { signal: opts.signal, timeoutMs: opts.timeoutMs ?? DEFAULT_STEP_TIMEOUT_MS, what });
  const abs = path.resolve(dir);
  try {
    // Find the nearest existing ancestor, then create each missing level (never mkdir's recursive mode).
    const missing: string[] = [];
    let cur = abs;
    for (;;) {
      const st = await guard(stat(cur), `Checking ${label}`).catch((e: unknown) => {
        if ((e as { code?: string }).code === 'ENOENT') return undefined;
        throw e;
      });
      if (st) {
        if (!st.isDirectory()) {
          throw new CrispError(
            'not-a-folder',
            cur === abs
              ? `The output folder ${label} is a file, not a folder. Choose a folder.`
              : `Cannot create the output folder ${label}: ${cur} is a file, not a folder.`,
          );
        }
        break;
      }
      missing.unshift(cur);
      const parent = path.dirname(cur);
      if (parent === cur) break;
      cur = parent;
    }
    for (const d of missing) {
      await guard(mkdir(d), `Creating ${label}`).catch((e: unknown) => {
        if ((e as { code?: string }).code !== 'EEXIST') throw e;
      });
    }
    const probe = path.join(abs, `.crisp-write-test-${randomBytes(4).toString('hex')}`);
    const fh = await guard(open(probe, 'wx'), `Writing to ${label}`);
    await fh.close();
    await rm(probe, { force: true });
  } catch (e) {
    if (isCrispError(e)) throw e;
    const u = toUserError(e, { path: label, action: 'use the output folder' });
    throw new CrispError(u.code, u.message, { cause: e });
  }
}
