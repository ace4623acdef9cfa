import { readFileSync } from 'node:fs';
import path from 'node:path';
import * as ort from 'onnxruntime-node';
import sharp from 'sharp';
import { describe, expect, it } from 'vitest';
import { GraphBuilder } from '../../engine/convert/graph/onnxWriter.js';
import { readOnnx } from '../../engine/core/onnx/onnxReader.js';
import { branchlessPrelu } from '../../engine/core/onnx/preluRewrite.js';
import { createInference } from '../../engine/core/inference/index.js';
import { resolveModel } from '../../engine/core/models/catalog.js';
import { IMAGES_DIR, MODELS_DIR } from '../helpers/paths.js';

/** Deterministic values in [-1, 1). */
function values(n: number, seed: number): Float32Array {
  let a = seed >>> 0;
  return Float32Array.from({ length: n }, () => {
    a = (Math.imul(a, 1664525) + 1013904223) >>> 0;
    return a / 2 ** 31 - 1;
  });
}

/** conv(3→C) → PReLU(slopes) → conv(C→3) [→ extra consumer of the PReLU output]. */
function chain(slopes: Float32Array, channels: number, opts: { sideOutput?: boolean } = {}): Uint8Array {
  const g = new GraphBuilder('prelu-chain');
  const w1 = g.weight('w1', [channels, 3, 3, 3], values(channels * 27, 1));
  const b1 = g.weight('b1', [channels], values(channels, 2));
  const a = g.weight('slope', slopes.length === 1 ? [1] : [channels, 1, 1], slopes);
  const w2 = g.weight('w2', [3, channels, 3, 3], values(3 * channels * 9, 3));
  const h = g.conv('input', w1, b1, [3, 3], [1, 1, 1, 1]);
  const act = g.node('PRelu', [h, a]);
  const y = g.conv(act, w2, null, [3, 3], [1, 1, 1, 1], {}, opts.sideOutput ? 'y' : 'output');
  if (opts.sideOutput)
    g.node(
      'Add',
      [y, g.node('ReduceMean', [act], { axes: { kind: 'ints', value: [1] }, keepdims: { kind: 'int', value: 1 } })],
      {},
      'output',
    );
  return g.toBytes();
}

async function run(model: Uint8Array | string, x: Float32Array, dims: number[]): Promise<Float32Array> {
  const o: ort.InferenceSession.SessionOptions = {
    executionProviders: ['cpu'],
    intraOpNumThreads: 1,
    logSeverityLevel: 3,
  };
  const s =
    typeof model === 'string'
      ? await ort.InferenceSession.create(model, o)
      : await ort.InferenceSession.create(model, o);
  try {
    const out = await s.run({ [s.inputNames[0]!]: new ort.Tensor('float32', x, dims) });
    return out[s.outputNames[0]!]!.data as Float32Array;
  } finally {
    await s.release();
  }
}

const maxDiff = (a: Float32Array, b: Float32Array) => a.reduce((m, v, i) => Math.max(m, Math.abs(v - b[i]!)), 0);
const ops = (model: Uint8Array) => readOnnx(model).nodes.map((n) => n.opType);

describe('PReLU as Mul + Max (branch-free)', () => {
  it('computes the same numbers for slopes below 0, between 0 and 1, exactly 1 and above 1', async () => {
    const slopes = Float32Array.of(-1.4, -0.2, 0, 0.25, 0.9, 1, 1.3, 1.9);
    const model = chain(slopes, 8);
    const r = branchlessPrelu(model);
    expect(r.rewritten).toBe(1);
    expect(r.negatedChannels).toBe(2);
    expect(ops(r.bytes)).toEqual(['Conv', 'Mul', 'Max', 'Conv']);
    const x = values(3 * 20 * 24, 7);
    const [a, b] = await Promise.all([run(model, x, [1, 3, 20, 24]), run(r.bytes, x, [1, 3, 20, 24])]);
    expect(a.length).toBe(3 * 20 * 24);
    expect(maxDiff(a, b)).toBeLessThan(1e-5);
  });

  it('handles a single shared slope', async () => {
    const model = chain(Float32Array.of(1.5), 4);
    const r = branchlessPrelu(model);
    expect(r.rewritten).toBe(1);
    expect(r.negatedChannels).toBe(4);
    const x = values(3 * 16 * 16, 9);
    expect(maxDiff(await run(model, x, [1, 3, 16, 16]), await run(r.bytes, x, [1, 3, 16, 16]))).toBeLessThan(1e-5);
  });

  it('leaves a PReLU alone when its output also feeds something other than a conv', () => {
    const model = chain(Float32Array.of(0.1, 1.5, 0.3, 2), 4, { sideOutput: true });
    const r = branchlessPrelu(model);
    expect(r.rewritten).toBe(0);
    expect(r.bytes).toBe(model);
  });

  it('is bit-exact on realesr-general-x4v3 with a real photo, and the engine runs it on the CPU', async () => {
    const m = resolveModel('service-lite-4x', [MODELS_DIR]);
    const original = new Uint8Array(readFileSync(m.path));
    const r = branchlessPrelu(original);
    expect(r.rewritten).toBe(ops(original).filter((o) => o === 'PRelu').length);
    expect(ops(r.bytes)).not.toContain('PRelu');
    const n = 48;
    const { data } = await sharp(path.join(IMAGES_DIR, 'set14', 'baboon.png'))
      .removeAlpha()
      .extract({ left: 200, top: 200, width: n, height: n })
      .raw()
      .toBuffer({ resolveWithObject: true });
    const x = new Float32Array(3 * n * n);
    for (let i = 0; i < n * n; i++) for (let c = 0; c < 3; c++) x[c * n * n + i] = data[i * 3 + c]! / 255;
    const reference = await run(m.path, x, [1, 3, n, n]);
    expect(reference.length).toBe(3 * 4 * n * 4 * n);
    expect(maxDiff(reference, await run(r.bytes, x, [1, 3, n, n]))).toBe(0);
    // The engine's CPU session loads the rewritten graph; its output is the original model's.
    const session = await createInference({ executionProvider: 'cpu', precision: 'fp32', threads: 1 }).session(m);
    const out = await session.run(x, 1, n, n);
    expect(out.dims).toEqual([1, 3, 4 * n, 4 * n]);
    expect(maxDiff(reference, out.data)).toBe(0);
  });
});
