/**
 * int8 vs fp32 on the CPU: `npm run bench -- --only int8` (CRISP_BENCH_QUICK=1: fewer images and repeats).
 *
 * For each shipped model that is installed: quantize it as `crisp models quantize NAME` does by default
 * (`makeInt8Variant` on the bundled calibration set, resources/calibration), then, through the engine's own
 * inference module (`--precision fp32` vs `int8`):
 *   fp32 / int8 MP/s  input megapixels per second of session.run time on 256² tiles of Set14 photos (the
 *                     size of the tiles the CPU path runs on a typical photo), the two precisions
 *                     alternating tile by tile in the same process, so machine load hits both alike
 *   speed-up          int8 ÷ fp32, as wall time and as CPU time
 *   PSNR-Y vs HR      whole-image ×4 output against the ground truth: Set5 (shared LR/HR pairs) and all 14
 *                     Set14 photos (LR made here by bicubic ÷4; none of them is in the calibration set)
 *   int8 vs fp32      PSNR-Y of the int8 output against the fp32 output
 * Then the fp32 graph-level settings, each as a ratio against onnxruntime's defaults in the same run.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import * as ort from 'onnxruntime-node';
import sharp from 'sharp';
import { makeInt8Variant } from '../../engine/convert/int8/int8Build.js';
import { branchlessPrelu } from '../../engine/core/onnx/preluRewrite.js';
import { cpuFeatures, createInference, findInt8Variant, type ModelSession } from '../../engine/core/inference/index.js';
import { listModels, type ListedModel } from '../../engine/core/models/catalog.js';
import { IMAGES_DIR, MODELS_DIR } from '../helpers/paths.js';
import { planarOf, rgbOf, SET14, set14Pairs, set5Pairs, type HeldoutPair } from './int8Heldout.js';
import { psnrY, readRgb, type RgbImage } from './quality.js';

/** Speed tiles: 256² from the middle of the Set14 photos that are at least that large. */
const TILE = 256;
const TILE_SOURCES = ['baboon', 'barbara', 'bridge', 'comic', 'lenna', 'man', 'pepper', 'zebra'];

type Pair = HeldoutPair;

/** Set5 ×4 pairs and Set14 photos with bicubic ÷4 LR (the held-out set, int8Heldout.ts); quick: two of Set14. */
async function loadPairs(quick: boolean): Promise<{ set5: Pair[]; set14: Pair[] }> {
  const [set5, set14] = await Promise.all([set5Pairs(), set14Pairs(quick ? SET14.slice(0, 2) : SET14)]);
  return { set5, set14 };
}

/** Wall time and CPU time of one session.run; with one intra-op thread, CPU time is what load on a shared machine disturbs least. */
async function runWhole(session: ModelSession, img: RgbImage): Promise<{ out: RgbImage; s: number; cpuS: number }> {
  const x = planarOf(img);
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  const r = await session.run(x, 1, img.height, img.width);
  const s = (performance.now() - t0) / 1000;
  const c = process.cpuUsage(c0);
  return { out: rgbOf(r.data, r.dims[3], r.dims[2]), s, cpuS: (c.user + c.system) / 1e6 };
}

async function loadTiles(quick: boolean): Promise<RgbImage[]> {
  const tiles: RgbImage[] = [];
  for (const n of quick ? TILE_SOURCES.slice(0, 2) : TILE_SOURCES) {
    const file = path.join(IMAGES_DIR, 'set14', `${n}.png`);
    const meta = await sharp(file).metadata();
    if (meta.width < TILE || meta.height < TILE) continue;
    const left = (meta.width - TILE) >> 1;
    const top = (meta.height - TILE) >> 1;
    tiles.push(
      await readRgb(await sharp(file).removeAlpha().extract({ left, top, width: TILE, height: TILE }).png().toBuffer()),
    );
  }
  return tiles;
}

interface SetScore {
  fp32Hr: number;
  int8Hr: number;
  int8VsFp32: number;
  /** The worst image of the set, int8 against fp32: what the quality bar is decided on. */
  worstVsFp32: number;
  worstName: string;
}

const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

async function fp32Settings(modelPath: string, quick: boolean): Promise<string[][]> {
  const bytes = new Uint8Array(await readFile(modelPath));
  const img = await readRgb(path.join(IMAGES_DIR, 'set14', 'lenna.png'));
  const crop = { data: new Uint8Array(256 * 256 * 3), width: 256, height: 256 };
  for (let y = 0; y < 256; y++)
    crop.data.set(img.data.subarray(((128 + y) * img.width + 128) * 3, ((128 + y) * img.width + 384) * 3), y * 256 * 3);
  const x = new ort.Tensor('float32', planarOf(crop), [1, 3, 256, 256]);
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'crisp-int8-opt-'));
  const optimized = path.join(tmp, 'optimized.onnx');
  const variants: Array<{
    name: string;
    opts: ort.InferenceSession.SessionOptions;
    file?: string;
    bytes?: Uint8Array;
  }> = [
    { name: 'onnxruntime defaults (graph opt all)', opts: { graphOptimizationLevel: 'all' } },
    { name: 'graph opt basic (no NCHWc / Conv+PReLU fusion)', opts: { graphOptimizationLevel: 'basic' } },
    { name: 'graph opt disabled', opts: { graphOptimizationLevel: 'disabled' } },
    {
      name: 'static input shape 256² (freeDimensionOverrides)',
      opts: { graphOptimizationLevel: 'all', freeDimensionOverrides: { batch: 1, height: 256, width: 256 } },
    },
    { name: 'no CPU memory arena', opts: { graphOptimizationLevel: 'all', enableCpuMemArena: false } },
    {
      name: 'sequential, 1 inter-op thread (what Crisp sets)',
      opts: { graphOptimizationLevel: 'all', executionMode: 'sequential', interOpNumThreads: 1 },
    },
    {
      name: 'intra-op spinning off',
      opts: { graphOptimizationLevel: 'all', extra: { session: { intra_op: { allow_spinning: '0' } } } },
    },
    { name: 'loaded from optimizedModelFilePath', opts: { graphOptimizationLevel: 'all' }, file: optimized },
    {
      name: 'PReLU as Mul + Max (what Crisp runs on the CPU)',
      opts: { graphOptimizationLevel: 'all', executionMode: 'sequential', interOpNumThreads: 1 },
      bytes: branchlessPrelu(bytes).bytes,
    },
  ];
  try {
    await (
      await ort.InferenceSession.create(bytes, {
        graphOptimizationLevel: 'all',
        optimizedModelFilePath: optimized,
        logSeverityLevel: 3,
      })
    ).release();
    const sessions: Array<{ name: string; session: ort.InferenceSession; createMs: number }> = [];
    for (const v of variants) {
      const t0 = performance.now();
      const o: ort.InferenceSession.SessionOptions = { executionProviders: ['cpu'], logSeverityLevel: 3, ...v.opts };
      const session = v.file
        ? await ort.InferenceSession.create(v.file, o)
        : await ort.InferenceSession.create(v.bytes ?? bytes, o);
      sessions.push({ name: v.name, session, createMs: performance.now() - t0 });
      await session.run({ input: x });
    }
    const times = sessions.map(() => 0);
    const rounds = quick ? 2 : 5;
    // Round-robin so a burst of load on the shared machine lands on every setting alike.
    for (let r = 0; r < rounds; r++) {
      for (const [k, s] of sessions.entries()) {
        const t0 = performance.now();
        await s.session.run({ [s.session.inputNames[0] ?? 'input']: x });
        times[k]! += performance.now() - t0;
      }
    }
    const base = times[0]!;
    const rows = sessions.map((s, k) => [
      s.name,
      ((rounds * 256 * 256) / 1e6 / (times[k]! / 1000)).toFixed(3),
      `${(base / times[k]!).toFixed(2)}×`,
      `${Math.round(s.createMs)} ms`,
    ]);
    await Promise.all(sessions.map((s) => s.session.release()));
    return rows;
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}

function table(header: string[], rows: string[][]): void {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i]!)).join(' | ')} |`;
  console.log(line(header));
  console.log(`|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`);
  for (const r of rows) console.log(line(r));
}

export async function runInt8Bench(): Promise<void> {
  const quick = process.env.CRISP_BENCH_QUICK === '1';
  // CRISP_BENCH_THREADS=1 compares one core against one core: on a machine shared with other jobs, a
  // thread pool wider than the free cores measures the scheduler more than the kernels.
  const threads = process.env.CRISP_BENCH_THREADS ? Number(process.env.CRISP_BENCH_THREADS) : undefined;
  const cpu = cpuFeatures();
  const shipped = ['service-lite-4x', 'clear-boost-4x', 'crystal-plus-4x', 'digital-art-4x'];
  const models = listModels([MODELS_DIR]).filter(
    (m): m is ListedModel & { installed: true; path: string } =>
      m.installed && m.path !== undefined && shipped.includes(m.name),
  );
  console.log(
    `\nint8 vs fp32 — ${os.cpus().length} CPUs (${os.cpus()[0]?.model ?? '?'}), int8 instructions: ${cpu.int8Dot.join(', ') || 'none'} (${cpu.source}); ` +
      `cpu provider, ${threads ? `${threads} intra-op thread(s)` : 'default threads'}, speed on ${TILE}² tiles, quality on whole images, ×4${quick ? ', QUICK' : ''}. Shared, noisy machine: compare ratios within this run only.`,
  );
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'crisp-int8-bench-'));
  try {
    // CRISP_BENCH_INT8_DIR keeps the variants between runs (quantizing is most of this section's time).
    const int8Dir = process.env.CRISP_BENCH_INT8_DIR ?? path.join(tmp, 'int8');
    const { set5, set14 } = await loadPairs(quick);
    const tiles = await loadTiles(quick);
    const rows: string[][] = [];
    for (const m of models) {
      const q0 = performance.now();
      const variant =
        (await findInt8Variant(m.path, [int8Dir])) ??
        (await makeInt8Variant(m.path, { outDir: int8Dir, ...(quick ? { crops: 16 } : {}) })).variant;
      const quantizeS = (performance.now() - q0) / 1000;
      const notices: string[] = [];
      const f32 = await createInference({ executionProvider: 'cpu', precision: 'fp32', threads }).session({
        entry: m,
        path: m.path,
      });
      const inf8 = createInference({
        executionProvider: 'cpu',
        precision: 'int8',
        int8Dirs: [int8Dir],
        threads,
        log: (s) => notices.push(s),
      });
      const i8 = await inf8.session({ entry: m, path: m.path });
      if (i8.precision !== 'int8') {
        rows.push([`${m.name} (${m.model})`, 'int8 not used', notices.join(' '), '', '', '', '', '', '', '', '', '']);
        continue;
      }
      // Warm-up: first runs allocate the arena.
      await runWhole(f32, set5[0]!.lr);
      await runWhole(i8, set5[0]!.lr);
      const t = { f: 0, q: 0, fc: 0, qc: 0, px: 0 };
      const score = async (pairs: Pair[]): Promise<SetScore> => {
        const s: { f: number[]; q: number[]; d: number[]; n: string[] } = { f: [], q: [], d: [], n: [] };
        for (const p of pairs) {
          const a = await runWhole(f32, p.lr);
          const b = await runWhole(i8, p.lr);
          s.f.push(psnrY(a.out, p.hr));
          s.q.push(psnrY(b.out, p.hr));
          s.d.push(psnrY(b.out, a.out));
          s.n.push(p.name);
        }
        const worst = Math.min(...s.d);
        return {
          fp32Hr: mean(s.f),
          int8Hr: mean(s.q),
          int8VsFp32: mean(s.d),
          worstVsFp32: worst,
          worstName: s.n[s.d.indexOf(worst)]!,
        };
      };
      for (let round = 0; round < (quick ? 1 : 2); round++) {
        for (const tile of tiles) {
          const a = await runWhole(f32, tile);
          const b = await runWhole(i8, tile);
          t.f += a.s;
          t.q += b.s;
          t.fc += a.cpuS;
          t.qc += b.cpuS;
          t.px += tile.width * tile.height;
        }
      }
      const s5 = await score(set5);
      const s14 = await score(set14);
      const mp = t.px / 1e6;
      const dropMax = Math.max(s5.fp32Hr - s5.int8Hr, s14.fp32Hr - s14.int8Hr);
      const worst = s5.worstVsFp32 <= s14.worstVsFp32 ? s5 : s14;
      // The issue's bars: int8 ÷ fp32 time ≤ 0.5, worst image ≥ 40 dB from fp32, drop against HR ≤ 0.1 dB.
      const pass = Math.min(t.q / t.f, t.qc / t.fc) <= 0.5 && dropMax <= 0.1 && worst.worstVsFp32 >= 40;
      rows.push([
        `${m.name} (${m.model})`,
        (mp / t.f).toFixed(3),
        (mp / t.q).toFixed(3),
        `${(t.q / t.f).toFixed(2)} (${(t.f / t.q).toFixed(2)}×)`,
        `${(t.qc / t.fc).toFixed(2)} (${(t.fc / t.qc).toFixed(2)}×)`,
        `${s5.fp32Hr.toFixed(2)} / ${s5.int8Hr.toFixed(2)}`,
        `${s14.fp32Hr.toFixed(2)} / ${s14.int8Hr.toFixed(2)}`,
        `${s5.int8VsFp32.toFixed(2)} / ${s14.int8VsFp32.toFixed(2)}`,
        `${worst.worstVsFp32.toFixed(2)} (${worst.worstName})`,
        `${variant.manifest.psnrYVsFp32.toFixed(2)} / ${(variant.manifest.worstCropPsnrY ?? 0).toFixed(2)} (${variant.manifest.method})`,
        `${quantizeS.toFixed(0)} s`,
        pass ? 'yes' : 'no',
      ]);
      console.error(`done: int8 ${m.name}`);
    }
    table(
      [
        'model',
        'fp32 MP/s',
        'int8 MP/s',
        'int8 ÷ fp32 time (wall)',
        'int8 ÷ fp32 (CPU time)',
        'Set5 PSNR-Y vs HR fp32/int8',
        'Set14 fp32/int8',
        'int8 vs fp32 mean Set5/Set14',
        'worst image vs fp32',
        'holdout pooled / worst dB (ranges)',
        'quantize',
        'bar met',
      ],
      rows,
    );
    console.log(
      'bar: int8 ÷ fp32 time ≤ 0.5, PSNR-Y drop vs HR ≤ 0.1 dB on both sets, worst Set5+Set14 image ≥ 40 dB from fp32.',
    );
    const first = models[0];
    if (first) {
      console.log(
        `\nfp32 graph-level settings — ${first.model}, 256² crop of lenna, session.run MP/s, ratio against onnxruntime's defaults in this run`,
      );
      table(['setting', 'MP/s', 'vs defaults', 'session create'], await fp32Settings(first.path, quick));
    }
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}
