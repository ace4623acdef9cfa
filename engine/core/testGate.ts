/**
 * Test-only hold points, so a test can act while work is mid-run (kill a worker, press Stop, let a lease
 * pass) without racing the machine's speed. Production never sets `CRISP_TEST_GATE_DIR`; with it unset,
 * `holdPoint` returns at once and touches nothing.
 *
 * Protocol (files, so it crosses process boundaries: `crisp serve`, `crisp worker`, the app's engine process):
 * the test creates `<dir>/<point>.hold` before the work gets there; on reaching the point the process writes
 * `<point>.reached` (its pid inside) and waits until the test deletes `<point>.hold` (or replaces it: each
 * hold carries a token), or until the work is aborted. A point with no `.hold` file is passed straight through. test/README.md shows the helper.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';

export const TEST_GATE_ENV = 'CRISP_TEST_GATE_DIR';

/** The point a job holds at as it starts, named after its input file (one spelling for core and the tests). */
export const inputPoint = (fileName: string): string => `input-${fileName.replace(/[^\w.-]/g, '_')}`;
/** The point an image reaches when its inference is over and its encode starts (pipeline/upscale.ts). */
export const encodePoint = (fileName: string): string => `encode-${fileName.replace(/[^\w.-]/g, '_')}`;

/**
 * The point a model run blocks at (blockAtPoint), after its progress step is announced and before the run:
 * a held run stands for a long one, for progress that must move while inference holds the thread.
 */
export const runPoint = (tileIndex: number): string => `run-${tileIndex}`;

const POLL_MS = 20;

/** The hold file's token, or undefined once the test has deleted it. */
const tokenOf = (file: string): Promise<string | undefined> => readFile(file, 'utf8').catch(() => undefined);

/**
 * Holds here while the test asks for it (see the file comment); a no-op unless CRISP_TEST_GATE_DIR is set.
 * Several names may be given, most specific first (`task-<id>-image-1`, `image-1`): the first one held wins,
 * so a test can hold work it cannot name in advance.
 */
export async function holdPoint(points: string | readonly string[], signal?: AbortSignal): Promise<void> {
  const dir = process.env[TEST_GATE_ENV];
  if (!dir) return;
  for (const point of typeof points === 'string' ? [points] : points) {
    const hold = path.join(dir, `${point}.hold`);
    const token = await tokenOf(hold);
    if (token === undefined) continue;
    await writeFile(path.join(dir, `${point}.reached`), String(process.pid));
    // Until the test deletes this hold; a new hold set at once after (another token) is for the next arrival.
    while ((await tokenOf(hold)) === token) {
      signal?.throwIfAborted();
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    }
    return;
  }
}

/**
 * The same hold, blocking the thread instead of awaiting: it stands for CPU-bound pixel work, which must never
 * stall the caller's event loop (core's worker threads call it after a job's first tile, point
 * `core-first-tile`). A no-op unless CRISP_TEST_GATE_DIR is set.
 */
export function blockAtPoint(point: string): void {
  const dir = process.env[TEST_GATE_ENV];
  if (!dir) return;
  const hold = path.join(dir, `${point}.hold`);
  const tokenNow = (): string | undefined => {
    try {
      return readFileSync(hold, 'utf8');
    } catch {
      return undefined;
    }
  };
  const token = tokenNow();
  if (token === undefined) return;
  writeFileSync(path.join(dir, `${point}.reached`), String(process.pid));
  const nap = new Int32Array(new SharedArrayBuffer(4));
  while (tokenNow() === token) Atomics.wait(nap, 0, 0, POLL_MS);
}
