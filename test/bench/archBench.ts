/**
 * One row per converted architecture: `npm run bench -- --only arch` (CRISP_BENCH_QUICK=1: one timed run).
 *
 * Each architecture at its common released configuration, with random weights built by the test-only PyTorch
 * reference (test/convert/support/sr_reference.py, so Debian's python3-torch is needed) and converted by Crisp,
 * runs fp32 on the CPU on a 256² tile of a Set14 photo: ms per tile and input MP/s of session.run time, and the
 * cost relative to SRVGGNetCompact (realesr-general-x4v3) measured in the same process, rows alternating run
 * by run so machine load hits all alike. The relative costs feed tilingOf (engine/convert/architecture.ts).
 * i28b/i28c add their rows to ROWS.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as ort from 'onnxruntime-node';
import { convertBytes } from '../../engine/convert/convert.js';
import { randomRrdb } from '../convert/support/reference.js';
import { photoPatch, PYTHON } from '../convert/support/srReference.js';
import { writeSafetensors } from '../convert/support/torchWriters.js';
import { ONNX_DIR } from '../helpers/paths.js';

const TILE = 256;
const SCRIPT = path.join(import.meta.dirname, '..', 'convert', 'support', 'sr_reference.py');

interface Row {
  name: string;
  /** Configuration in words, for the table. */
  config: string;
  /** sr_reference.py options (arch, sizes) at the released configuration. */
  options: Record<string, unknown>;
}

const ROWS: Row[] = [
  {
    name: 'SPAN',
    config: 'x4, 48 feat',
    options: { arch: 'span', in: 3, out: 3, feat: 48, scale: 4, norm: true },
  },
  {
    name: 'RealPLKSR',
    config: 'x4, 64 dim, 28 blocks, kernel 17',
    options: {
      arch: 'realplksr',
      dim: 64,
      blocks: 28,
      scale: 4,
      kernel: 17,
      split: 0.25,
      ea: true,
      layerNorm: false,
      dysample: false,
    },
  },
  {
    name: 'RealPLKSR DySample',
    config: 'x4, 64 dim, 28 blocks, LayerNorm',
    options: {
      arch: 'realplksr',
      dim: 64,
      blocks: 28,
      scale: 4,
      kernel: 17,
      split: 0.25,
      ea: true,
      layerNorm: true,
      dysample: true,
    },
  },
  {
    name: 'OmniSR',
    config: 'x4, 64 feat, 5 groups × 1 block, window 8',
    options: {
      arch: 'omnisr',
      in: 3,
      out: 3,
      feat: 64,
      blocks: 1,
      groups: 5,
      window: 8,
      pe: true,
      bias: true,
      scale: 4,
    },
  },
];

async function timeRuns(sessions: ort.InferenceSession[], input: ort.Tensor, repeats: number): Promise<number[][]> {
  const times = sessions.map(() => [] as number[]);
  for (const s of sessions) await s.run({ [s.inputNames[0]!]: input }); // warm-up
  for (let r = 0; r < repeats; r++) {
    for (const [i, s] of sessions.entries()) {
      const t0 = performance.now();
      await s.run({ [s.inputNames[0]!]: input });
      times[i]!.push(performance.now() - t0);
    }
  }
  return times;
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

export async function archBench(): Promise<void> {
  console.log(`\nArchitectures: fp32 CPU, one ${TILE}² tile (set14/baboon), random weights at released sizes`);
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'crisp-arch-bench-'));
  try {
    const small = await photoPatch({ image: 'set14/baboon.png', left: 0, top: 0, w: 16, h: 16, c: 3 });
    const smallFile = path.join(tmp, 'small.bin');
    writeFileSync(smallFile, small.data);
    const configs = ROWS.map((r, i) => ({
      dir: path.join(tmp, String(i)),
      seed: 100 + i,
      wrapper: 'params_ema',
      inputs: [{ file: smallFile, c: 3, h: 16, w: 16 }],
      ...r.options,
    }));
    for (const c of configs) execFileSync('mkdir', ['-p', c.dir]);
    execFileSync(PYTHON, [SCRIPT, JSON.stringify(configs)], { stdio: 'pipe' });
    const opts: ort.InferenceSession.SessionOptions = { logSeverityLevel: 3 };
    const baseline = await ort.InferenceSession.create(path.join(ONNX_DIR, 'realesr-general-x4v3.onnx'), opts);
    // RRDBNet (ESRGAN x4plus sizes) for comparison, from the TypeScript random-weight generator.
    const rrdb = randomRrdb({ layout: 'basicsr', numBlocks: 23, scale: 4, numFeat: 64, numGrowCh: 32 });
    const rrdbOnnx = (await convertBytes(writeSafetensors(rrdb.dict), 'safetensors')).onnx;
    const sessions = [baseline, await ort.InferenceSession.create(rrdbOnnx, opts)];
    for (const c of configs) {
      const converted = await convertBytes(readFileSync(path.join(c.dir, 'model.safetensors')), 'safetensors');
      sessions.push(await ort.InferenceSession.create(converted.onnx, opts));
    }
    const tile = await photoPatch({ image: 'set14/baboon.png', left: 100, top: 100, w: TILE, h: TILE, c: 3 });
    const input = new ort.Tensor('float32', tile.data, [1, 3, TILE, TILE]);
    const repeats = process.env.CRISP_BENCH_QUICK ? 1 : 3;
    const times = (await timeRuns(sessions, input, repeats)).map(median);
    const mp = (TILE * TILE) / 1e6;
    const rows: Array<[string, string, number]> = [
      ['SRVGGNetCompact (baseline)', 'x4, 64 feat, 32 conv', times[0]!],
      ['RRDBNet (ESRGAN)', 'x4, 64 feat, 23 blocks, 32 grow', times[1]!],
      ...ROWS.map((r, i): [string, string, number] => [r.name, r.config, times[i + 2]!]),
    ];
    console.log('architecture                 configuration                              ms/tile    MP/s   × SRVGG');
    for (const [name, config, ms] of rows) {
      console.log(
        `${name.padEnd(28)} ${config.padEnd(42)} ${ms.toFixed(0).padStart(7)} ${(mp / (ms / 1000)).toPrecision(2).padStart(7)} ${(ms / times[0]!).toFixed(1).padStart(9)}`,
      );
    }
    for (const s of sessions) await s.release();
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}
