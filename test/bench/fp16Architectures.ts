/**
 * The fp16 graph of every converted architecture (random-weight checkpoints from test/convert/golden, converted by
 * engine/convert as `crisp models import` does), run on a crop of a real photo against its fp32 graph on
 * onnxruntime's CPU provider (fp16 tensors between nodes, fp32 arithmetic; fp16Heldout.ts): does the conversion
 * load and run for each op set, and how far from fp32 does it land. Random weights are not a quality measure for
 * real models (their activations are not trained ranges); a load or run failure, or a NaN, is the finding.
 *
 *   node --import tsx test/bench/fp16Architectures.ts [suite/id …]
 */
import { readdirSync } from 'node:fs';
import path from 'node:path';
import sharp from 'sharp';
import { convertBytes } from '../../engine/convert/convert.js';
import { openRawModel } from '../../engine/core/inference/rawModel.js';
import { fp16Graph } from '../../engine/core/onnx/fp16Graph.js';
import { readOnnx } from '../../engine/core/onnx/onnxReader.js';
import { IMAGES_DIR } from '../helpers/paths.js';
import { GOLDEN_DIR, loadGolden } from '../convert/support/golden.js';

const only = process.argv.slice(2);
const cases =
  only.length > 0
    ? only
    : readdirSync(GOLDEN_DIR).flatMap((suite) =>
        readdirSync(path.join(GOLDEN_DIR, suite))
          .filter((f) => f.endsWith('.json'))
          .map((f) => `${suite}/${f.replace(/\.json$/, '')}`),
      );

async function crop(channels: number, side: number): Promise<Float32Array> {
  const { data } = await sharp(path.join(IMAGES_DIR, 'set14', 'baboon.png'))
    .extract({ left: 200, top: 180, width: side, height: side })
    .removeAlpha()
    .raw()
    .toBuffer({ resolveWithObject: true });
  const plane = side * side;
  const x = new Float32Array(channels * plane);
  for (let c = 0; c < channels; c++)
    for (let i = 0; i < plane; i++) x[c * plane + i] = data[i * 3 + Math.min(c, 2)]! / 255;
  return x;
}

for (const id of cases) {
  const [suite, name] = id.split('/') as [string, string];
  try {
    const golden = loadGolden(suite, name);
    const [file, bytes] = [...golden.files.entries()][0]!;
    const fp32 = (await convertBytes(new Uint8Array(bytes), file.endsWith('.safetensors') ? 'safetensors' : 'pth'))
      .onnx;
    const g = fp16Graph(fp32);
    const info = readOnnx(fp32);
    const channels = Number(info.inputs[0]?.shape[1] ?? 3) || 3;
    const x = await crop(channels, 32);
    const a = await openRawModel(fp32, { threads: 2 });
    const h = await openRawModel(g.bytes, { threads: 2, optimization: 'basic' });
    const ya = [...(await a.run(x, [1, channels, 32, 32])).values()][0]!.data;
    const yh = [...(await h.run(x, [1, channels, 32, 32])).values()][0]!.data;
    await a.release();
    await h.release();
    let max = 0;
    let nan = 0;
    for (let i = 0; i < ya.length; i++) {
      if (!Number.isFinite(yh[i]!)) nan++;
      else max = Math.max(max, Math.abs(ya[i]! - yh[i]!));
    }
    const ops = [...new Set(info.nodes.map((n) => n.opType))].length;
    console.log(
      `${id}: ${ops} op types, ${g.converted} tensors fp16, kept fp32 ${g.keptFloat32.length}; max |fp16 − fp32| ${max.toExponential(2)}${nan ? `, ${nan} non-finite` : ''}`,
    );
  } catch (e) {
    console.log(`${id}: FAILED ${(e as Error).message.split('\n')[0]}`);
  }
}
