/**
 * The fp16 variant of a model judged against its fp32 graph on whole held-out images (Set5 + Set14 ×4 LR,
 * int8Heldout.ts): the figures an fp16 manifest records (engine/core/inference/fp16Variant.ts). The fp16 graph runs
 * on onnxruntime's CPU provider at 'basic' optimisation, so its tensors stay fp16 between nodes (rawModel.ts);
 * the CPU kernels still compute in fp32, so a GPU's fp16 arithmetic can differ further (re-measure there).
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { FP16_QUALITY_BAR_DB, fileSha256, sha256Of, type Fp16Manifest } from '../../engine/core/inference/index.js';
import { openRawModel } from '../../engine/core/inference/rawModel.js';
import { fp16Graph } from '../../engine/core/onnx/fp16Graph.js';
import { outputsOf, scoreOutputs, type HeldoutPair } from './int8Heldout.js';

export const FP16_MEASURED_ON =
  "onnxruntime CPU provider, 'basic' optimisation: fp16 tensors between nodes, fp32 arithmetic";

export async function measureFp16(
  modelPath: string,
  pairs: readonly HeldoutPair[],
  set: string,
  threads = 2,
): Promise<{ manifest: Fp16Manifest; perImage: Array<{ name: string; psnrY: number }> }> {
  const fp32 = new Uint8Array(readFileSync(modelPath));
  const { bytes } = fp16Graph(fp32);
  const a = await openRawModel(fp32, { threads });
  const h = await openRawModel(bytes, { threads, optimization: 'basic' });
  try {
    const s = scoreOutputs(pairs, await outputsOf(a, pairs), await outputsOf(h, pairs));
    const worst = s.perImage.reduce((x, y) => (y.psnrY < x.psnrY ? y : x));
    // Identical 8-bit outputs score +∞; JSON has no ∞, so the manifest records 99 dB for them (as scoreOutputs does).
    const db = (v: number) => Math.round((Number.isFinite(v) ? v : 99) * 100) / 100;
    return {
      perImage: s.perImage,
      manifest: {
        format: 1,
        source: { file: path.basename(modelPath), sha256: fileSha256(modelPath), bytes: fp32.length },
        graphSha256: sha256Of(bytes),
        createdAt: new Date().toISOString(),
        set,
        images: pairs.length,
        worstPsnrY: db(s.worst),
        worstImage: worst.name,
        meanPsnrY: db(s.mean),
        measuredOn: FP16_MEASURED_ON,
        passed: s.worst >= FP16_QUALITY_BAR_DB,
      },
    };
  } finally {
    await a.release();
    await h.release();
  }
}
