/**
 * Where an image's time goes (issue 37): one 960×540 → 3840×2160 upscale, (a) with a null ×4 model (one Resize
 * node: the pipeline's own cost) and (b) with the bundled compact model (realesr-general-x4v3), against
 *   floor   sharp alone: decode + ×4 Lanczos resize + encode of the same output (what any pipeline must pay),
 *   bare    onnxruntime's session.run on the whole image, nothing around it,
 * all measured in this run. Per model: the time of each pipeline stage for one image (upscaleImage's StageClock:
 * stages overlap when the pipeline does, so they may add up to more than the wall time), and the marginal time
 * per image in a batch of 4 through the core's worker thread (what `crisp batch` and the app run):
 * (T(4 images) − T(1 image)) / 3, so start-up is not counted. Ratio = marginal ÷ (floor + bare). "queue" is the
 * same marginal through what `crisp batch` and the app really run: the job queue (app/jobs/jobQueue.ts), which
 * hands the engine process one image at a time (the next one once the previous says it is only encoding).
 *
 * `npm run bench -- --only pipeline` (CRISP_BENCH_FORMAT=jpg for JPEG; CRISP_BENCH_EP=webgpu or --ep webgpu for a
 * GPU provider; CRISP_BENCH_MODELS=null-x4 or compact for one row).
 */
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as ort from 'onnxruntime-node';
import sharp from 'sharp';
import { attr, GraphBuilder } from '../../engine/convert/graph/onnxWriter.js';
import { createLocalBackend } from '../../app/backends/local/localBackend.js';
import { JobQueue } from '../../app/jobs/jobQueue.js';
import { createCore } from '../../engine/core/index.js';
import { createInference, type ExecutionProvider } from '../../engine/core/inference/index.js';
import type { ResolvedModel } from '../../engine/core/models/catalog.js';
import { importCustomModel } from '../../engine/convert/install/importModel.js';
import { customModelEntry } from '../../engine/core/models/taskModel.js';
import { pngLevel, upscaleImage } from '../../engine/core/pipeline/index.js';
import { STAGES } from '../../engine/core/pipeline/stageTimes.js';
import { IMAGES_DIR, REPO_ROOT } from '../helpers/paths.js';

const W = 960;
const H = 540;
const SCALE = 4;

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[s.length >> 1]!;
}

async function timeIt(n: number, fn: () => Promise<unknown>): Promise<number> {
  const ts: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    await fn();
    ts.push((performance.now() - t0) / 1000);
  }
  return median(ts);
}

/** A ×4 "model" that only resizes (bilinear): what the pipeline costs around any model. */
function nullModel(): Uint8Array {
  const g = new GraphBuilder('null-x4');
  const scales = g.weight('scales', [4], new Float32Array([1, 1, SCALE, SCALE]));
  g.node('Resize', ['input', '', scales], { mode: attr.string('linear') }, 'output');
  return g.toBytes({ producer: 'crisp-bench' });
}

function epFromArgs(): ExecutionProvider {
  const i = process.argv.indexOf('--ep');
  const v = (i >= 0 ? process.argv[i + 1] : undefined) ?? process.env.CRISP_BENCH_EP ?? 'cpu';
  return v as ExecutionProvider;
}

export async function stagesBench(): Promise<void> {
  const ep = epFromArgs();
  const format: 'jpg' | 'png' = process.env.CRISP_BENCH_FORMAT === 'jpg' ? 'jpg' : 'png';
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'crisp-stages-'));
  try {
    const input = path.join(tmp, 'in.png');
    await sharp(path.join(IMAGES_DIR, 'set14', 'baboon.png'))
      .resize(W, H, { fit: 'fill' })
      .png()
      .toFile(input);
    const models = path.join(tmp, 'models');
    mkdirSync(models);
    writeFileSync(path.join(tmp, 'null-x4.onnx'), nullModel());
    copyFileSync(
      path.join(REPO_ROOT, 'resources', 'models', 'realesr-general-x4v3.onnx'),
      path.join(tmp, 'compact.onnx'),
    );
    // CRISP_BENCH_MODELS=null-x4 (or compact) runs one row only.
    const only = process.env.CRISP_BENCH_MODELS?.split(',');
    const rows: Array<{ label: string; name: string }> = [
      { label: 'null ×4 (one Resize)', name: 'null-x4' },
      { label: 'compact ×4 (realesr-general-x4v3, bundled)', name: 'compact' },
    ].filter((r) => !only || only.includes(r.name));
    console.log(
      `\nStages: one ${W}×${H} → ${W * SCALE}×${H * SCALE} image, ${format.toUpperCase()}, ${ep} provider, fp32; ${os.cpus().length} CPUs (${os.cpus()[0]?.model ?? '?'})`,
    );
    const floorS = await timeIt(3, () => {
      const s = sharp(input).resize(W * SCALE, H * SCALE, { kernel: 'lanczos3' });
      return (format === 'png' ? s.png({ compressionLevel: pngLevel(0) }) : s.jpeg({ quality: 100 })).toFile(
        path.join(tmp, `floor.${format}`),
      );
    });
    console.log(`floor (sharp decode + ×4 resize + encode): ${floorS.toFixed(3)} s`);
    const header = [
      'model',
      'bare run s',
      'marginal s/img',
      '÷ (floor + bare)',
      'queue s/img',
      'queue ÷ (floor + bare)',
      ...STAGES.map((s) => `${s} ms`),
      'wall ms',
    ];
    const table: string[][] = [];
    for (const row of rows) {
      const listing = await importCustomModel(path.join(tmp, `${row.name}.onnx`), {
        modelsDir: models,
        name: row.name,
      });
      const model: ResolvedModel = customModelEntry(listing);
      // Bare: the same graph, a plain session, the whole image in one run.
      const session = await ort.InferenceSession.create(model.path, {
        executionProviders: [ep],
        graphOptimizationLevel: 'all',
        logSeverityLevel: 3,
      });
      const x = new Float32Array(3 * W * H).fill(0.5);
      const feed = () => ({ [session.inputNames[0]!]: new ort.Tensor('float32', x, [1, 3, H, W]) });
      await session.run(feed());
      const bareS = await timeIt(3, () => session.run(feed()));
      await session.release();

      // Stages: one image through the pipeline on this thread (after a warm-up that creates the session).
      const inference = createInference({ executionProvider: ep, precision: 'fp32' });
      const job = (out: string) => ({
        input: { path: input },
        inputName: 'in.png',
        model,
        scale: SCALE as 4,
        format,
        compression: 0,
        outputPath: path.join(tmp, out),
      });
      await upscaleImage(job(`warm.${format}`), inference);
      const stages = (await upscaleImage(job(`stages.${format}`), inference)).stages;
      await inference.release();

      // Marginal: batches through the core's worker thread, as crisp batch runs them.
      const core = createCore({
        executionProvider: ep,
        precision: 'fp32',
        models: { modelDirs: [models], customModelsDir: models },
      });
      const batch = (n: number, tag: string) =>
        Promise.all(
          Array.from({ length: n }, (_, i) =>
            core.upscaleFile({
              inputPath: input,
              inputName: 'in.png',
              outputPath: path.join(tmp, `${tag}-${i}.${format}`),
              model: model.entry.name,
              scale: SCALE,
              format,
              compression: 0,
            }),
          ),
        );
      await batch(1, 'warm');
      const one = await timeIt(1, () => batch(1, 'one'));
      const four = await timeIt(1, () => batch(4, 'four'));
      await core.close();
      const marginal = (four - one) / 3;

      // The same through the job queue and the engine process (crisp batch, the app).
      const local = createLocalBackend({
        dataDir: path.join(tmp, 'engine'),
        modelDirs: [models],
        customModelsDir: models,
        executionProvider: ep,
        precision: 'fp32',
      });
      const queued = async (n: number, tag: string) => {
        const inputs = path.join(tmp, `${tag}-in`);
        mkdirSync(inputs);
        for (let i = 0; i < n; i++) copyFileSync(input, path.join(inputs, `in${i}.png`));
        const queue = await JobQueue.open({
          backend: () => local,
          settings: () => ({
            model: `custom:${row.name}`,
            scale: SCALE,
            format,
            compression: 0,
            face: false,
            outputFolder: path.join(tmp, `${tag}-out`),
            template: '{name}.{ext}',
            overwrite: 'replace',
          }),
        });
        await queue.addPaths([inputs]);
        await queue.start();
        await queue.idle();
        const bad = queue.snapshot().items.filter((i) => i.status !== 'done');
        if (bad.length > 0) throw new Error(`queue bench: ${bad[0]!.error ?? bad[0]!.status}`);
      };
      await queued(1, `${row.name}-qwarm`);
      const qOne = await timeIt(1, () => queued(1, `${row.name}-q1`));
      const qFour = await timeIt(1, () => queued(4, `${row.name}-q4`));
      await local.close();
      const queueMarginal = (qFour - qOne) / 3;
      table.push([
        row.label,
        bareS.toFixed(3),
        marginal.toFixed(3),
        `×${(marginal / (floorS + bareS)).toFixed(2)}`,
        queueMarginal.toFixed(3),
        `×${(queueMarginal / (floorS + bareS)).toFixed(2)}`,
        ...STAGES.map((s) => (stages[s] !== undefined ? stages[s]!.toFixed(0) : '–')),
        (stages.wall ?? 0).toFixed(0),
      ]);
      console.error(`done: ${row.label}`);
    }
    const widths = header.map((h, i) => Math.max(h.length, ...table.map((r) => r[i]!.length)));
    const line = (cells: string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i]!)).join(' | ')} |`;
    console.log(line(header));
    console.log(`|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`);
    for (const r of table) console.log(line(r));
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}
