/**
 * TEST-ONLY gate: holds a job in the middle of its pixel work so a test can act while it is known to run
 * (a lease expiring, the server's event loop under load) without racing the machine's speed.
 *
 * Active only when the environment variable CRISP_TEST_HOLD_DIR names a folder; production never sets it
 * (docs/architecture.md). After a job's first tile the worker thread writes `<dir>/held` and then blocks —
 * synchronously, like a long pixel loop would — until `<dir>/release` exists. Blocking rather than awaiting is
 * the point: it stands for CPU-bound work, which must never stall the caller's event loop.
 */
import { existsSync, writeFileSync } from 'node:fs';
import path from 'node:path';

export const TEST_HOLD_ENV = 'CRISP_TEST_HOLD_DIR';

export function holdForTest(): void {
  const dir = process.env[TEST_HOLD_ENV];
  if (!dir) return;
  writeFileSync(path.join(dir, 'held'), String(Date.now()));
  const release = path.join(dir, 'release');
  const nap = new Int32Array(new SharedArrayBuffer(4));
  while (!existsSync(release)) Atomics.wait(nap, 0, 0, 20);
}
