/**
 * Benchmarks: `npm run bench` (CRISP_BENCH_QUICK=1 for a fast run). This file's own section, `models`: every
 * installed model through the pipeline.
 *
 * Each row (model × image set) runs in its own child process so its peak RSS (getrusage maxRSS) is
 * isolated. Columns:
 *   e2e MP/s      input megapixels per second through upscaleImage (decode → tiles → encode PNG → write)
 *   model MP/s    input megapixels per second of session.run time only
 *   tile ovh      extra pixels run because of tile overlap (padded tile area / image area − 1)
 *   peak RSS      of the child, measured before the baseline runs
 *   base MP/s     the baseline: a bare onnxruntime session on the whole image, same process and run.
 *                 For the large input, whole-image inference would need several GB of activations,
 *                 so the baseline is the bare session on its central 512×512 crop (marked *).
 */
import { archBench } from './archBench.js';
import { stagesBench } from './stagesBench.js';
import { serveTasksBench } from './serveTasksBench.js';
import { faceCropBench } from './faceCropBench.js';
import { facesBench } from './facesBench.js';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import sharp from 'sharp';
import { createInference, type Inference, type ModelSession } from '../../engine/core/inference/index.js';
import { listModels, resolveModel, type ListedModel } from '../../engine/core/models/catalog.js';
import { upscaleImage } from '../../engine/core/pipeline/index.js';
import type { ModelName } from '../../engine/contract/index.js';
import { IMAGES_DIR, MODELS_DIR } from '../helpers/paths.js';
import { runFairnessBench } from './fairnessBench.js';
import { bareUpscale, readRgb } from './quality.js';

interface ChildJob {
  model: ModelName;
  inputs: string[];
  /** Crop the baseline to the central N×N (large inputs). */
  baselineCrop?: number;
  tmp: string;
}

interface ChildResult {
  inputMp: number;
  e2eS: number;
  modelS: number;
  tiledMp: number;
  peakRssMb: number;
  provider: string;
  baseMp: number;
  baseS: number;
}

/** Wraps an Inference so every session.run is timed and its pixels counted. */
function timed(inner: Inference, acc: { s: number; px: number }): Inference {
  return {
    requested: inner.requested,
    release: () => inner.release(),
    graph: (file) => inner.graph(file),
    forJob(work) {
      const job = inner.forJob(work);
      return { ...timed(job, acc), providerReason: (m) => job.providerReason(m) };
    },
    async session(model, work) {
      const s = await inner.session(model, work);
      const wrapped: ModelSession = {
        model: s.model,
        get provider() {
          return s.provider;
        },
        scale: s.scale,
        async run(input, n, h, w) {
          const t0 = performance.now();
          const r = await s.run(input, n, h, w);
          acc.s += (performance.now() - t0) / 1000;
          acc.px += n * h * w;
          return r;
        },
      };
      return wrapped;
    },
  };
}

async function child(job: ChildJob): Promise<ChildResult> {
  const model = resolveModel(job.model, [MODELS_DIR]);
  const acc = { s: 0, px: 0 };
  const inference = timed(createInference({ executionProvider: 'cpu' }), acc);
  let inputPx = 0;
  let provider = '';
  // Warm-up on a tiny input so session creation is not counted.
  const warm = path.join(job.tmp, `warm-${job.model}.png`);
  await upscaleImage(
    {
      input: {
        data: await sharp({ create: { width: 16, height: 16, channels: 3, background: '#888' } })
          .png()
          .toBuffer(),
      },
      inputName: 'warm',
      model,
      scale: 4,
      format: 'png',
      compression: 0,
      outputPath: warm,
    },
    inference,
  );
  acc.s = 0;
  acc.px = 0;
  const t0 = performance.now();
  for (const [i, input] of job.inputs.entries()) {
    const meta = await sharp(input).metadata();
    inputPx += meta.width * meta.height;
    const r = await upscaleImage(
      {
        input: { path: input },
        inputName: path.basename(input),
        model,
        scale: 4,
        format: 'png',
        compression: 0,
        outputPath: path.join(job.tmp, `${job.model}-${i}.png`),
      },
      inference,
    );
    provider = r.provider;
  }
  const e2eS = (performance.now() - t0) / 1000;
  const peakRssMb = process.resourceUsage().maxRSS / 1024;
  await inference.release();

  let baseS = 0;
  let basePx = 0;
  for (const input of job.inputs) {
    let img = await readRgb(input);
    if (job.baselineCrop && (img.width > job.baselineCrop || img.height > job.baselineCrop)) {
      const c = job.baselineCrop;
      const buf = await sharp(input)
        .extract({ left: (img.width - c) >> 1, top: (img.height - c) >> 1, width: c, height: c })
        .png()
        .toBuffer();
      img = await readRgb(buf);
    }
    if (baseS === 0 && basePx === 0)
      await bareUpscale(model.path, { data: new Uint8Array(16 * 16 * 3), width: 16, height: 16 }); // warm-up
    const b0 = performance.now();
    await bareUpscale(model.path, img);
    baseS += (performance.now() - b0) / 1000;
    basePx += img.width * img.height;
  }
  return {
    inputMp: inputPx / 1e6,
    e2eS,
    modelS: acc.s,
    tiledMp: acc.px / 1e6,
    peakRssMb,
    provider,
    baseMp: basePx / 1e6,
    baseS,
  };
}

import { formatServerRows, runServerBench } from './serverBench.js';
import { runTeamBench } from './teamBench.js';
import { runInt8Bench } from './int8Bench.js';
import { uxBench } from './uxBench.js';
import { hugeBench } from './hugeBench.js';
import { startupBench } from './startupBench.js';

async function pipelineBench(): Promise<void> {
  const quick = process.env.CRISP_BENCH_QUICK === '1';
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'crisp-bench-'));
  try {
    const set5 = readdirSync(path.join(IMAGES_DIR, 'set5-x4', 'lr'))
      .sort()
      .map((f) => path.join(IMAGES_DIR, 'set5-x4', 'lr', f));
    const set14 = ['baboon.png', 'lenna.png', 'monarch.png'].map((f) => path.join(IMAGES_DIR, 'set14', f));
    const side = quick ? 768 : 2000;
    const large = path.join(tmp, `baboon-${side}.png`);
    await sharp(path.join(IMAGES_DIR, 'set14', 'baboon.png'))
      .resize(side, side, { fit: 'fill', kernel: 'lanczos3' })
      .png()
      .toFile(large);

    const sets: Array<{ label: string; inputs: string[]; crop?: number }> = quick
      ? [
          { label: 'set5 LR ×5', inputs: set5 },
          { label: `${side}² (baboon)`, inputs: [large] },
        ]
      : [
          { label: 'set5 LR ×5', inputs: set5 },
          { label: 'set14 ×3 (baboon, lenna, monarch)', inputs: set14 },
          { label: `${side}² (baboon)`, inputs: [large], crop: 512 },
        ];
    const models = listModels([MODELS_DIR]).filter((m): m is ListedModel & { installed: true } => m.installed);
    const self = fileURLToPath(import.meta.url);
    console.log(
      `Crisp pipeline bench — ${os.cpus().length} CPUs (${os.cpus()[0]?.model ?? '?'}), ×4, PNG output, cpu provider${quick ? ', QUICK' : ''}`,
    );
    const header = [
      'model',
      'input',
      'MP',
      'e2e MP/s',
      'model MP/s',
      'tile ovh',
      'peak RSS',
      'base MP/s',
      'model ÷ base',
      'e2e ÷ base',
    ];
    const rows: string[][] = [];
    for (const m of models) {
      for (const set of sets) {
        const job: ChildJob = {
          model: m.name,
          inputs: set.inputs,
          tmp,
          ...(set.crop ? { baselineCrop: set.crop } : {}),
        };
        const out = execFileSync(process.execPath, ['--import', 'tsx', self, '--child', JSON.stringify(job)], {
          encoding: 'utf8',
          stdio: ['ignore', 'pipe', 'ignore'],
        });
        const r = JSON.parse(out.trim().split('\n').pop() ?? '{}') as ChildResult;
        rows.push([
          `${m.name} (${m.model})`,
          set.label,
          r.inputMp.toFixed(2),
          (r.inputMp / r.e2eS).toFixed(3),
          (r.inputMp / r.modelS).toFixed(3),
          `${((r.tiledMp / r.inputMp - 1) * 100).toFixed(1)}%`,
          `${Math.round(r.peakRssMb)} MB`,
          `${(r.baseMp / r.baseS).toFixed(3)}${set.crop ? '*' : ''}`,
          `${(r.inputMp / r.modelS / (r.baseMp / r.baseS)).toFixed(2)}×`,
          `${(r.inputMp / r.e2eS / (r.baseMp / r.baseS)).toFixed(2)}×`,
        ]);
        console.error(`done: ${m.name} ${set.label}`);
      }
    }
    const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
    const line = (cells: string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i]!)).join(' | ')} |`;
    console.log(line(header));
    console.log(`|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`);
    for (const r of rows) console.log(line(r));
    if (sets.some((s) => s.crop))
      console.log('* baseline on the central 512×512 crop (whole-image inference at this size needs several GB).');
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}

async function serverBench(): Promise<void> {
  console.log(
    '\nServer: crisp serve (own process, default flags) beside a bare Node http server, same run, same client; loopback, shared cores',
  );
  console.log(formatServerRows(await runServerBench()));
}

/**
 * Every bench section, in the order `npm run bench` runs them. Each prints its own table.
 * `npm run bench -- --only pipeline,server` runs a subset (`pipeline`: stagesBench.ts, where an image's time goes;
 * `models`: the table above, every installed model). A new subject adds one line here.
 */
const SECTIONS: Array<{ name: string; run: () => Promise<void> }> = [
  { name: 'pipeline', run: stagesBench },
  { name: 'models', run: pipelineBench },
  { name: 'serve-tasks', run: serveTasksBench },
  { name: 'server', run: serverBench },
  {
    name: 'team',
    run: async () =>
      console.log(
        `\nTeam scale: one crisp serve vs 2 API + 2 worker processes on PostgreSQL, same run, same client; loopback, shared cores\n${await runTeamBench()}`,
      ),
  },
  { name: 'faces', run: facesBench },
  { name: 'faces-crop', run: faceCropBench },
  { name: 'int8', run: runInt8Bench },
  { name: 'ux', run: uxBench },
  { name: 'huge', run: hugeBench },
  {
    name: 'fairness',
    run: async () => console.log(`\nFairness (two users, one device)\n${(await runFairnessBench()).join('\n')}`),
  },
  { name: 'startup', run: startupBench },
  { name: 'arch', run: archBench },
];

async function main(): Promise<void> {
  const onlyAt = process.argv.indexOf('--only');
  const only = onlyAt >= 0 ? new Set((process.argv[onlyAt + 1] ?? '').split(',').filter(Boolean)) : undefined;
  const unknown = only ? [...only].filter((n) => !SECTIONS.some((s) => s.name === n)) : [];
  if (unknown.length > 0) {
    console.error(`bench: unknown section ${unknown.join(', ')}; sections: ${SECTIONS.map((s) => s.name).join(', ')}`);
    process.exit(2);
  }
  for (const section of SECTIONS) {
    if (only && !only.has(section.name)) continue;
    await section.run();
  }
}

const childAt = process.argv.indexOf('--child');
if (childAt >= 0) {
  const job = JSON.parse(process.argv[childAt + 1] ?? '{}') as ChildJob;
  console.log(JSON.stringify(await child(job)));
} else {
  await main();
}
