/**
 * Huge-image bench (`npm run bench -- --only huge`): peak memory and throughput of large outputs.
 *
 * Rows: a 12 MP (4000×3000) and a 3 MP (2000×1500) photo at ×4 — 192 and 48 MP out, both streamed to a disk
 * raster — against a 768×768 input at ×4 (9.4 MP out, the in-memory path) as the baseline, for PNG and
 * JPEG. Each row runs in its own child process, so its peak RSS (getrusage maxRSS, after a warm-up that
 * loads the model) is its own. Targets (issue 13): 12 MP ≤ 1 GB peak RSS; 3 MP within 25 % of it; output
 * MP/s within 10 % of the 768² row of the same format. The machine is shared: compare ratios within one run.
 *
 * CRISP_BENCH_HUGE_MODEL picks the model (default service-lite-4x). `thin` is an SRVGGNetCompact with the same
 * 64-feature maps (so the same activation memory per tile) but 2 body convolutions instead of 32, with random
 * weights: the memory figures stand, while the run takes minutes instead of an hour on a loaded 2-core machine.
 * CRISP_BENCH_QUICK=1 runs 6 and 1.5 MP instead of 12 and 3.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import sharp from 'sharp';
import type { ModelName, SaveImageAs } from '../../engine/contract/index.js';
import { createInference } from '../../engine/core/inference/index.js';
import type { ConvWeights } from '../../engine/convert/architectures/architecture.js';
import { buildSrvggOnnx } from '../../engine/convert/architectures/srvgg.js';
import { resolveModel, type ResolvedModel } from '../../engine/core/models/catalog.js';
import { upscaleImage } from '../../engine/core/pipeline/index.js';
import { IMAGES_DIR, MODELS_DIR } from '../helpers/paths.js';

interface HugeChildJob {
  model: ModelName | 'thin';
  /** Forced output path; default auto. */
  mode?: 'memory' | 'disk';
  /** The thin model's ONNX file. */
  thinPath?: string;
  input: string;
  format: SaveImageAs;
  tmp: string;
}

interface HugeChildResult {
  outMp: number;
  seconds: number;
  peakRssMb: number;
  streamed: boolean;
  estMemoryMb: number;
  estTempMb: number;
  outputMb: number;
}

async function child(job: HugeChildJob): Promise<HugeChildResult> {
  const model: ResolvedModel =
    job.model === 'thin'
      ? { entry: resolveModel('service-lite-4x', [MODELS_DIR]).entry, path: job.thinPath! }
      : resolveModel(job.model, [MODELS_DIR]);
  const inference = createInference({ executionProvider: 'cpu' });
  // Warm-up: the model session is created before the timed run (and counts in the peak, as in real use).
  const warm = await sharp({ create: { width: 64, height: 64, channels: 3, background: '#888' } })
    .png()
    .toBuffer();
  await upscaleImage(
    {
      input: { data: warm },
      inputName: 'warm',
      model,
      scale: 4,
      format: job.format,
      compression: 0,
      outputPath: path.join(job.tmp, `warm-${process.pid}.${job.format}`),
    },
    inference,
  );
  const out = path.join(job.tmp, `out-${process.pid}.${job.format}`);
  const t0 = performance.now();
  const r = await upscaleImage(
    {
      input: { path: job.input },
      inputName: path.basename(job.input),
      model,
      scale: 4,
      format: job.format,
      compression: 0,
      outputPath: out,
      ...(job.mode ? { outputMode: job.mode } : {}),
    },
    inference,
  );
  const seconds = (performance.now() - t0) / 1000;
  const peakRssMb = process.resourceUsage().maxRSS / 1024;
  rmSync(out, { force: true });
  return {
    outMp: (r.width * r.height) / 1e6,
    seconds,
    peakRssMb,
    streamed: r.budget.streamed,
    estMemoryMb: r.budget.memoryBytes / 2 ** 20,
    estTempMb: r.budget.tempDiskBytes / 2 ** 20,
    outputMb: r.bytes / 2 ** 20,
  };
}

/** SRVGGNetCompact ×4, 64 features, 2 body convolutions, PReLU, small random weights (seeded). */
function thinSrvgg(): Uint8Array {
  let seed = 42;
  const rand = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31 - 0.5) * 0.05;
  const conv = (out: number, inp: number): ConvWeights => ({
    weight: { shape: [out, inp, 3, 3], data: Float32Array.from({ length: out * inp * 9 }, rand) },
    bias: { shape: [out], data: new Float32Array(out) },
  });
  const numFeat = 64;
  const numConv = 2;
  const convs = [
    conv(numFeat, 3),
    ...Array.from({ length: numConv }, () => conv(numFeat, numFeat)),
    conv(3 * 16, numFeat),
  ];
  const slopes = Array.from({ length: numConv + 1 }, () => new Float32Array(numFeat).fill(0.1));
  return buildSrvggOnnx(
    { kind: 'srvgg', inChannels: 3, outChannels: 3, numFeat, numConv, scale: 4, activation: 'prelu' },
    { convs, slopes },
  );
}

function printTable(header: string[], rows: string[][]): void {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i]!)).join(' | ')} |`;
  console.log(line(header));
  console.log(`|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`);
  for (const r of rows) console.log(line(r));
}

export async function hugeBench(): Promise<void> {
  const quick = process.env.CRISP_BENCH_QUICK === '1';
  const modelName = (process.env.CRISP_BENCH_HUGE_MODEL ?? 'service-lite-4x') as ModelName | 'thin';
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'crisp-bench-huge-'));
  try {
    const thinPath = path.join(tmp, 'thin-srvgg-x4.onnx');
    if (modelName === 'thin') writeFileSync(thinPath, thinSrvgg());
    const source = path.join(IMAGES_DIR, 'set14', 'baboon.png');
    const make = async (w: number, h: number) => {
      const p = path.join(tmp, `baboon-${w}x${h}.png`);
      await sharp(source).resize(w, h, { fit: 'fill', kernel: 'lanczos3' }).png().toFile(p);
      return p;
    };
    const sizes: Array<{ label: string; w: number; h: number; role: 'base' | 'big' | 'mid' }> = [
      { label: '768×768', w: 768, h: 768, role: 'base' },
      quick
        ? { label: '3000×2000 (6 MP)', w: 3000, h: 2000, role: 'big' }
        : { label: '4000×3000 (12 MP)', w: 4000, h: 3000, role: 'big' },
      quick
        ? { label: '1500×1000 (1.5 MP)', w: 1500, h: 1000, role: 'mid' }
        : { label: '2000×1500 (3 MP)', w: 2000, h: 1500, role: 'mid' },
    ];
    const self = fileURLToPath(import.meta.url);
    console.log(
      `\nHuge images — ${modelName}, ×4, cpu provider, ${os.cpus().length} CPUs (shared machine: compare ratios within this run)${quick ? ', QUICK' : ''}`,
    );
    const header = [
      'input',
      'format',
      'out MP',
      'path',
      'seconds',
      'out MP/s',
      'MP/s ÷ 768² row',
      'peak RSS',
      'RSS ÷ big row',
      'est. RAM',
      'temp disk',
      'file',
    ];
    const rows: string[][] = [];
    for (const format of ['png', 'jpg'] as const) {
      const results: Array<{ role: string; label: string; r: HugeChildResult }> = [];
      for (const s of sizes) {
        const input = await make(s.w, s.h);
        const job: HugeChildJob = { model: modelName, thinPath, input, format, tmp };
        const out = execFileSync(process.execPath, ['--import', 'tsx', self, '--huge-child', JSON.stringify(job)], {
          encoding: 'utf8',
          stdio: ['ignore', 'pipe', 'inherit'],
        });
        results.push({
          role: s.role,
          label: s.label,
          r: JSON.parse(out.trim().split('\n').pop() ?? '{}') as HugeChildResult,
        });
        console.error(`done: ${format} ${s.label}`);
      }
      const base = results.find((x) => x.role === 'base')!.r;
      const big = results.find((x) => x.role === 'big')!.r;
      for (const { label, r } of results) {
        rows.push([
          label,
          format,
          r.outMp.toFixed(1),
          r.streamed ? 'streamed' : 'memory',
          r.seconds.toFixed(1),
          (r.outMp / r.seconds).toFixed(2),
          `${(r.outMp / r.seconds / (base.outMp / base.seconds)).toFixed(2)}×`,
          `${Math.round(r.peakRssMb)} MB`,
          `${(r.peakRssMb / big.peakRssMb).toFixed(2)}×`,
          `${Math.round(r.estMemoryMb)} MB`,
          `${Math.round(r.estTempMb)} MB`,
          `${Math.round(r.outputMb)} MB`,
        ]);
      }
    }
    printTable(header, rows);

    // The direct cost of streaming: the same input through both paths, alternating, so load changes on a
    // shared machine hit both alike. Ratio < 1: streaming is slower.
    const mid = sizes.find((s) => s.role === 'mid')!;
    const input = await make(mid.w, mid.h);
    const pairs: string[][] = [];
    for (const format of ['png', 'jpg'] as const) {
      const secs: Record<'memory' | 'disk', number[]> = { memory: [], disk: [] };
      const rss: Record<'memory' | 'disk', number[]> = { memory: [], disk: [] };
      for (let round = 0; round < 2; round++) {
        for (const mode of round === 0 ? (['memory', 'disk'] as const) : (['disk', 'memory'] as const)) {
          const job: HugeChildJob = { model: modelName, thinPath, input, format, tmp, mode };
          const out = execFileSync(process.execPath, ['--import', 'tsx', self, '--huge-child', JSON.stringify(job)], {
            encoding: 'utf8',
            stdio: ['ignore', 'pipe', 'inherit'],
          });
          const r = JSON.parse(out.trim().split('\n').pop() ?? '{}') as HugeChildResult;
          secs[mode].push(r.seconds);
          rss[mode].push(r.peakRssMb);
          console.error(`done: ${format} ${mid.label} ${mode} round ${round + 1}`);
        }
      }
      const sum = (a: number[]) => a.reduce((x, y) => x + y, 0);
      pairs.push([
        `${mid.label} ×4 ${format}`,
        secs.memory.map((s) => s.toFixed(1)).join(' / '),
        secs.disk.map((s) => s.toFixed(1)).join(' / '),
        `${(sum(secs.memory) / sum(secs.disk)).toFixed(2)}×`,
        `${Math.round(Math.max(...rss.memory))} MB`,
        `${Math.round(Math.max(...rss.disk))} MB`,
      ]);
    }
    console.log(
      '\nSame input, in-memory vs streamed (alternating runs; throughput ratio = memory seconds ÷ streamed seconds)',
    );
    printTable(
      ['job', 'memory s', 'streamed s', 'streamed ÷ memory MP/s', 'memory peak RSS', 'streamed peak RSS'],
      pairs,
    );
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}

const at = process.argv.indexOf('--huge-child');
if (at >= 0 && process.argv[1] === fileURLToPath(import.meta.url)) {
  console.log(JSON.stringify(await child(JSON.parse(process.argv[at + 1] ?? '{}') as HugeChildJob)));
}
