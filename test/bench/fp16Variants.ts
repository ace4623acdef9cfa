/**
 * Measures the fp16 variant of each bundled model (or of the ONNX files named) on Set5 + Set14 ×4 and writes its
 * manifest (<base>.fp16.json) beside the model, or into --out DIR. The fp16 graph itself is not written: the engine
 * builds it from the fp32 file when a GPU session opens, and the manifest pins it by sha256 (fp16Variant.ts).
 *
 *   node --import tsx test/bench/fp16Variants.ts [MODEL.onnx …] [--out DIR] [--dry]
 */
import path from 'node:path';
import { saveFp16Manifest } from '../../engine/core/inference/index.js';
import { bundledModelsDir } from '../../engine/core/models/catalog.js';
import { measureFp16 } from './fp16Heldout.js';
import { set14Pairs, set5Pairs } from './int8Heldout.js';

const args = process.argv.slice(2);
const outAt = args.indexOf('--out');
const out = outAt >= 0 ? args[outAt + 1]! : undefined;
const dry = args.includes('--dry');
const files = args.filter((a, i) => a.endsWith('.onnx') && (outAt < 0 || i !== outAt + 1));
const dir = bundledModelsDir({});
const pairs = [...(await set5Pairs()), ...(await set14Pairs())];
for (const file of files.length > 0 ? files : ['realesr-general-x4v3.onnx', 'realesr-animevideov3.onnx']) {
  const modelPath = path.isAbsolute(file) ? file : path.join(dir, file);
  const start = performance.now();
  const { manifest, perImage } = await measureFp16(modelPath, pairs, 'Set5 + Set14 ×4');
  const s = ((performance.now() - start) / 1000).toFixed(0);
  console.log(
    `${path.basename(modelPath)}: worst ${manifest.worstPsnrY} dB (${manifest.worstImage}), mean ${manifest.meanPsnrY} dB, passed ${manifest.passed} (${s} s)`,
  );
  console.log(`  ${perImage.map((x) => `${x.name} ${x.psnrY.toFixed(2)}`).join(', ')}`);
  if (!dry) console.log(`  wrote ${await saveFp16Manifest(out ?? path.dirname(modelPath), modelPath, manifest)}`);
}
