/**
 * A chain: a 1× restoration model (de-JPEG, denoise, deblur — 158 of OpenModelDB's models) runs over the whole
 * image before the upscaler, in one job. The pre-pass is an ordinary upscaleImage at ×1, so it follows the
 * huge-image rules on its own (tiles, streaming to disk); its result is a lossless PNG beside the output under
 * a temp name (swept like the temp rasters) and removed however the job ends, and the output is written only
 * by the upscaling pass, atomically, so a cancel in either pass leaves nothing under the output's name. Faces
 * are enhanced on the upscaling pass only. Progress is weighted by pixels: the upscaling pass writes scale²
 * times the pre-pass's.
 */
import path from 'node:path';
import type { Inference } from './inference/index.js';
import type { ResolvedModel } from './models/catalog.js';
import {
  stepWithin,
  upscaleImage,
  type ProgressListener,
  type UpscaleJob,
  type UpscaleResult,
} from './pipeline/index.js';
import { removeTemp, tempRasterPath } from './pipeline/tempFiles.js';

export type PassRunner = (job: UpscaleJob, onProgress: ProgressListener) => Promise<UpscaleResult>;

export async function withPreModel(
  job: UpscaleJob,
  preModel: ResolvedModel,
  inference: Inference,
  onProgress: ProgressListener,
  upscale: PassRunner,
): Promise<UpscaleResult> {
  const mid = tempRasterPath(path.dirname(job.outputPath), '.png');
  const w1 = 1 / (1 + job.scale * job.scale);
  try {
    // The pre-pass keeps no metadata; the upscaling pass reads it from the original input.
    const { faces: _faces, afterStitch: _after, metadata, onEncode: _onEncode, size: _size, ...rest } = job;
    await upscaleImage(
      {
        ...rest,
        ...(metadata ? { metadata: { policy: 'strip' as const } } : {}),
        model: preModel,
        scale: 1,
        outputPath: mid,
        format: 'png',
        // PNG is lossless at any level; 0 is its fastest.
        compression: 0,
        onProgress: (f, eta, step) => {
          // Until the upscaling pass is measured it is assumed to take scale² times as long (its share of pixels).
          const total1 = eta !== undefined && f < 0.98 ? eta / (1 - f) : undefined;
          onProgress(
            w1 * f,
            total1 !== undefined ? Math.round(eta! + (total1 * (1 - w1)) / w1) : undefined,
            stepWithin(step, 0, w1),
          );
        },
      },
      inference,
    );
    job.signal?.throwIfAborted();
    return await upscale(
      { ...job, input: { path: mid }, ...(metadata ? { metadata: { ...metadata, source: job.input } } : {}) },
      (f, eta, step) => onProgress(w1 + (1 - w1) * f, eta, stepWithin(step, w1, 1 - w1)),
    );
  } finally {
    await removeTemp(mid);
  }
}
