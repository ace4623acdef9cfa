/**
 * Makes the int8 variants shipped beside the bundled fp32 models (resources/models/<base>.int8.{onnx,json}),
 * exactly as `crisp models quantize` does with the defaults (bundled calibration set), then judges each on
 * the whole held-out images (Set5 + Set14 ×4 LR, int8Heldout.ts): `passed` in the manifest is decided on
 * the worst of those 19 images, and the speed-up is measured on this machine's CPU and recorded with its kind.
 * The quantizer is deterministic (fixed crops, seeded sampling), so a rerun writes the same model bytes.
 *
 *   node --import tsx test/bench/shippedInt8.ts [MODEL.onnx …] [--out DIR]
 */
import path from 'node:path';
import { makeInt8Variant } from '../../engine/convert/int8/int8Build.js';
import { bundledModelsDir } from '../../engine/core/models/catalog.js';
import { openRawModel } from '../../engine/core/inference/rawModel.js';
import { readFileSync } from 'node:fs';
import { outputsOf, scoreOutputs, set14Pairs, set5Pairs } from './int8Heldout.js';

const args = process.argv.slice(2);
const outAt = args.indexOf('--out');
const out = outAt >= 0 ? args[outAt + 1]! : undefined;
const files = args.filter((a, i) => a.endsWith('.onnx') && i !== outAt + 1);
const dir = bundledModelsDir({});
const pairs = [...(await set5Pairs()), ...(await set14Pairs())];
// Only digital-art-4x ships a variant: realesr-general-x4v3's does not reach the quality bar (docs/models.md),
// so `auto` would not use it; pass it (with --out DIR) to measure it.
for (const file of files.length > 0 ? files : ['realesr-animevideov3.onnx']) {
  const modelPath = path.isAbsolute(file) ? file : path.join(dir, file);
  const ref = await openRawModel(new Uint8Array(readFileSync(modelPath)), { threads: 1 });
  const refs = await outputsOf(ref, pairs);
  await ref.release();
  const { variant } = await makeInt8Variant(modelPath, {
    outDir: out ?? path.dirname(modelPath),
    onProgress: (m) => console.error(`  ${m}`),
    heldout: {
      set: 'Set5 + Set14 ×4',
      score: async (int8) => {
        const q = await openRawModel(int8, { threads: 1 });
        try {
          const s = scoreOutputs(pairs, refs, await outputsOf(q, pairs));
          const worst = s.perImage.reduce((a, b) => (b.psnrY < a.psnrY ? b : a));
          return { images: pairs.length, worstPsnrY: s.worst, worstImage: worst.name, meanPsnrY: s.mean };
        } finally {
          await q.release();
        }
      },
    },
  });
  console.log(`${path.basename(modelPath)} → ${variant.path}: ${JSON.stringify(variant.manifest)}`);
}
