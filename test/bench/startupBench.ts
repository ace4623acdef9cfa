/**
 * Startup bench: how long the compiled `crisp` takes to answer `--help` and `models list`, side by side
 * with a bare `node -e 0` measured in the same run (median of 5 each, runs interleaved so machine noise
 * hits all three alike). Targets (issue 17): --help ≤ 4×, models list ≤ 6× the bare Node start.
 * `npm run bench -- --only startup`.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
// @ts-expect-error plain JavaScript build script without type declarations
import { buildCli } from '../../scripts/buildCli.mjs';
import { REPO_ROOT } from '../helpers/paths.js';

const RUNS = 5;

function timeOnce(args: string[], env: NodeJS.ProcessEnv): number {
  const t0 = performance.now();
  const r = spawnSync(process.execPath, args, { cwd: REPO_ROOT, env, stdio: ['ignore', 'ignore', 'pipe'] });
  const ms = performance.now() - t0;
  if (r.status !== 0) throw new Error(`${args.join(' ')} exited ${r.status}: ${r.stderr.toString().trim()}`);
  return ms;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

export async function startupBench(): Promise<void> {
  await (buildCli as (o: { quiet: boolean }) => Promise<void>)({ quiet: true });
  const home = mkdtempSync(path.join(os.tmpdir(), 'crisp-bench-home-'));
  const env = { ...process.env, XDG_DATA_HOME: home };
  const bin = path.join(REPO_ROOT, 'bin/crisp.js');
  const rows = [
    { name: 'node -e 0', args: ['-e', '0'], target: undefined },
    { name: 'crisp --help', args: [bin, '--help'], target: 4 },
    { name: 'crisp models list', args: [bin, 'models', 'list'], target: 6 },
  ];
  const times = rows.map(() => [] as number[]);
  try {
    for (const row of rows) timeOnce(row.args, env); // warm the file cache
    for (let i = 0; i < RUNS; i++) rows.forEach((row, j) => times[j]!.push(timeOnce(row.args, env)));
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
  const base = median(times[0]!);
  console.log(`\nStartup (median of ${RUNS}, compiled CLI; shared machine, so read the ratios, not the milliseconds)`);
  console.log('command              median ms   × node -e 0   target');
  rows.forEach((row, j) => {
    const ms = median(times[j]!);
    const ratio = ms / base;
    const target = row.target === undefined ? '' : `≤ ${row.target}× ${ratio <= row.target ? 'met' : 'MISSED'}`;
    console.log(`${row.name.padEnd(20)} ${ms.toFixed(0).padStart(9)}   ${ratio.toFixed(2).padStart(11)}   ${target}`);
  });
}
