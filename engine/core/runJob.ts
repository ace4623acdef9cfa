/**
 * One job, inside a core worker thread: resolve the model (building a denoise blend when asked), resolve
 * the face model, then one or two passes of the pipeline. Everything here is CPU-heavy or calls what is
 * (decode, tiles, stitching, faces, encode), which is why it only ever runs in the pool (workerPool.ts).
 */
import { stat } from 'node:fs/promises';
import path from 'node:path';
import sharp from 'sharp';
import { resolveFaceModel } from './faces/faceModels.js';
import type { FaceStageOptions } from './faces/faceStage.js';
import type { Inference, JobWork } from './inference/index.js';
import type { ResolvedModel } from './models/catalog.js';
import { resolveTaskModel, type TaskModelSources } from './models/taskModel.js';
import { stepWithin, upscaleImage, type UpscaleJob, type UpscaleResult } from './pipeline/index.js';
import { removeTemp, tempRasterPath } from './pipeline/tempFiles.js';
import type { TaskModelName } from '../contract/index.js';
import type { CoreProgress, FaceJob, UpscaleFileJob, UpscaleFileResult } from './job.js';
import { withPreModel, type PassRunner } from './preModel.js';
import { holdPoint } from './testGate.js';
import type { TileTurn } from './tileTurns.js';

function faceStage(face: FaceJob, modelDirs: readonly string[]): Omit<FaceStageOptions, 'signal'> {
  const resolved = resolveFaceModel(face.model ?? undefined, modelDirs);
  return {
    detectorPath: resolved.detectorPath,
    restorerPath: resolved.restorerPath,
    restorerName: resolved.name,
    strength: face.strength ?? 1,
    ...(face.detect ? { detect: face.detect } : {}),
  };
}

export async function runJob(
  job: UpscaleFileJob,
  inference: Inference,
  sources: TaskModelSources,
  signal: AbortSignal,
  onProgress: CoreProgress,
  onEncode?: () => void,
  turn?: TileTurn,
): Promise<UpscaleFileResult> {
  signal.throwIfAborted();
  const model = await resolveTaskModel(
    { model: job.model, ...(job.denoise !== undefined ? { denoise: job.denoise } : {}) },
    sources,
  );
  const base: UpscaleJob = {
    input: { path: job.inputPath },
    inputName: job.inputName,
    model,
    scale: job.scale,
    ...(job.size ? { size: job.size } : {}),
    format: job.format,
    compression: job.compression,
    outputPath: job.outputPath,
    signal,
    ...(job.tileSize !== undefined ? { tileSize: job.tileSize } : {}),
    ...(job.limits ? { limits: job.limits } : {}),
    ...(job.face ? { faces: faceStage(job.face, sources.modelDirs) } : {}),
    ...(job.metadata ? { metadata: job.metadata } : {}),
    ...(onEncode ? { onEncode } : {}),
    ...(turn ? { turn } : {}),
  };
  // auto's provider is chosen for this job's work (autoProvider.ts), and the result says why.
  const jobInference = inference.forJob(await jobWork(job, model));
  const upscale: PassRunner = (j, report) =>
    job.passes === 2 ? upscaleTwice(j, jobInference, report) : upscaleImage({ ...j, onProgress: report }, jobInference);
  const preModel =
    job.preModel === undefined ? undefined : await resolveTaskModel({ model: job.preModel as TaskModelName }, sources);
  const r = preModel
    ? await withPreModel(base, preModel, jobInference, onProgress, upscale)
    : await upscale(base, onProgress);
  return {
    width: r.width,
    height: r.height,
    bytes: r.bytes,
    provider: r.provider,
    precision: r.precision,
    ...withReason(jobInference.providerReason(model)),
    streamed: r.budget.streamed,
    warnings: r.warnings ?? [],
    ...(r.faces ? { faces: r.faces } : {}),
  };
}

/**
 * The job's model work for auto's provider choice: the input's pixels from its header (the pipeline checks the
 * image itself; a header that cannot be read leaves the work unknown), both passes' when there are two.
 */
async function jobWork(job: UpscaleFileJob, model: ResolvedModel): Promise<JobWork | undefined> {
  try {
    const [meta, file] = await Promise.all([sharp(job.inputPath).metadata(), stat(model.path)]);
    if (!meta.width || !meta.height) return undefined;
    const pixels = meta.width * meta.height;
    return { inputPixels: job.passes === 2 ? pixels * (1 + job.scale * job.scale) : pixels, modelBytes: file.size };
  } catch {
    return undefined;
  }
}

const withReason = (reason: string | undefined) => (reason ? { providerReason: reason } : {});

/**
 * Double upscale: the image goes through the model, then its result goes through again (×4 twice is ×16).
 * Each pass is an ordinary upscaleImage, so each follows the huge-image rules on its own: the second pass's
 * input is the first's output, and when its output raster is large it streams to disk (budget.ts). The
 * intermediate is a lossless PNG beside the output under a temp name (swept like the temp rasters) and is
 * removed however the job ends; the output is written atomically by the second pass only, so a cancel in
 * either pass leaves nothing under the output's name. Faces are enhanced on the final pass only (on the
 * first they would be enlarged again and lose what the face model restored). Progress is weighted by each
 * pass's output pixels: the second does scale² times the work of the first.
 */
async function upscaleTwice(job: UpscaleJob, inference: Inference, onProgress: CoreProgress): Promise<UpscaleResult> {
  const dir = path.dirname(job.outputPath);
  const mid = tempRasterPath(dir, '.png');
  const w1 = 1 / (1 + job.scale * job.scale);
  try {
    // The first pass keeps no metadata; the second reads it from the original input. Its encode is not the
    // job's: the model is needed again by the second pass.
    const { faces: _faces, metadata, onEncode: _onEncode, size: _size, ...firstPass } = job;
    await upscaleImage(
      {
        ...firstPass,
        ...(metadata ? { metadata: { policy: 'strip' as const } } : {}),
        outputPath: mid,
        format: 'png',
        // PNG is lossless at any level; 0 is its fastest.
        compression: 0,
        onProgress: (f, eta, step) => {
          // Until the second pass is measured, it is assumed to take scale² times the first (its share of the pixels).
          const total1 = eta !== undefined && f < 0.98 ? eta / (1 - f) : undefined;
          onProgress(
            w1 * f,
            eta !== undefined && total1 !== undefined ? Math.round(eta + (total1 * (1 - w1)) / w1) : undefined,
            stepWithin(step, 0, w1),
          );
        },
      },
      inference,
    );
    // Test-only (CRISP_TEST_GATE_DIR; a no-op in production), without the signal: the check below must stop it.
    await holdPoint('pass-2');
    job.signal?.throwIfAborted();
    return await upscaleImage(
      {
        ...job,
        input: { path: mid },
        ...(metadata ? { metadata: { ...metadata, source: job.input } } : {}),
        onProgress: (f, eta, step) => onProgress(w1 + (1 - w1) * f, eta, stepWithin(step, w1, 1 - w1)),
      },
      inference,
    );
  } finally {
    await removeTemp(mid);
  }
}
