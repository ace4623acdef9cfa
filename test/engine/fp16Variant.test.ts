/**
 * fp16 variants for GPU providers (issue 37): the graph conversion, the manifests shipped beside the bundled models,
 * and the quality bar measured on real images. The fp16 graph runs here on onnxruntime's CPU provider (its tensors
 * stay fp16 between nodes at 'basic' optimisation; fp16Heldout.ts), about 20 s for Set5 on 2 cores.
 */
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  buildFp16,
  findFp16Manifest,
  FP16_QUALITY_BAR_DB,
  sha256Of,
  type Fp16Manifest,
} from '../../engine/core/inference/index.js';
import { bundledModelsDir } from '../../engine/core/models/catalog.js';
import { fp16Graph, fromHalf, ONNX_FLOAT16, toHalf } from '../../engine/core/onnx/fp16Graph.js';
import { ONNX_FLOAT, readOnnx } from '../../engine/core/onnx/onnxReader.js';
import { convertBytes } from '../../engine/convert/convert.js';
import { openRawModel } from '../../engine/core/inference/rawModel.js';
import { loadGolden } from '../convert/support/golden.js';
import { measureFp16 } from '../bench/fp16Heldout.js';
import { set5Pairs, type HeldoutPair } from '../bench/int8Heldout.js';

const BUNDLED = ['realesr-general-x4v3.onnx', 'realesr-animevideov3.onnx'].map((f) =>
  path.join(bundledModelsDir({}), f),
);
let set5: HeldoutPair[];
let tmp: string;
beforeAll(async () => {
  set5 = await set5Pairs();
  tmp = await mkdtemp(path.join(os.tmpdir(), 'crisp-fp16-'));
});
afterAll(() => rm(tmp, { recursive: true, force: true }));

describe('float → half', () => {
  it('rounds to nearest even, keeps subnormals and saturates beyond the half range', () => {
    expect(toHalf(1)).toBe(0x3c00);
    expect(toHalf(-2)).toBe(0xc000);
    expect(toHalf(65504)).toBe(0x7bff);
    expect(toHalf(1e6)).toBe(0x7bff);
    expect(toHalf(-1e6)).toBe(0xfbff);
    expect(toHalf(0)).toBe(0);
    // 1 + 2^-11 is halfway between 1 and the next half (1 + 2^-10): ties go to the even mantissa (1).
    expect(toHalf(1 + 2 ** -11)).toBe(0x3c00);
    expect(toHalf(1 + 3 * 2 ** -11)).toBe(0x3c02);
    expect(fromHalf(toHalf(2 ** -24))).toBe(2 ** -24);
    expect(toHalf(2 ** -26)).toBe(0);
    for (const v of [0.1, -0.3333, 3.14159, 1e-5, 123.456])
      expect(Math.abs(fromHalf(toHalf(v)) - v)).toBeLessThan(Math.abs(v) * 2 ** -11 + 2 ** -25);
    expect(Number.isNaN(fromHalf(toHalf(NaN)))).toBe(true);
  });
});

describe('fp16 graph of an fp32 model', () => {
  it('stores weights as float16, keeps Resize scales float32 and the graph float32 at both ends', () => {
    for (const file of BUNDLED) {
      const fp32 = readOnnx(new Uint8Array(readFileSync(file)));
      const g = fp16Graph(new Uint8Array(readFileSync(file)));
      const m = readOnnx(g.bytes);
      expect(m.inputs.map((i) => [i.name, i.elemType])).toEqual([['input', ONNX_FLOAT]]);
      expect(m.outputs.map((o) => [o.name, o.elemType])).toEqual([['output', ONNX_FLOAT]]);
      expect(m.nodes[0]).toMatchObject({ opType: 'Cast', inputs: ['input'], attrs: { to: ONNX_FLOAT16 } });
      expect(m.nodes.at(-1)).toMatchObject({ opType: 'Cast', outputs: ['output'], attrs: { to: ONNX_FLOAT } });
      // The Resize's scales (an initializer in one, a Constant node in the other) stay float32 and are its only float32 tensor.
      const resize = m.nodes.find((n) => n.opType === 'Resize')!;
      const floats = m.initializers.filter((t) => t.dataType === ONNX_FLOAT).map((t) => t.name);
      expect(floats).toEqual([resize.inputs[2]]);
      expect(g.keptFloat32).toEqual([resize.inputs[2]]);
      expect(m.nodes.some((n) => n.opType === 'Constant')).toBe(false);
      const weights = fp32.initializers.filter((t) => t.dataType === ONNX_FLOAT).length;
      expect(g.converted).toBe(weights - (file.includes('general') ? 1 : 0));
      // Half the bytes, and the same bytes every time (the manifest pins them).
      expect(g.bytes.length).toBeLessThan(readFileSync(file).length * 0.52);
      expect(sha256Of(fp16Graph(new Uint8Array(readFileSync(file))).bytes)).toBe(sha256Of(g.bytes));
    }
  });
});

describe('fp16 graph of converted architectures (random-weight goldens, converted as import does)', () => {
  // SRFormer and RGT compute a float Range from the input's shape (Shape → Cast → Range), MoSR's DySample a float
  // Range from constants: onnxruntime has no float16 Range, so those would not load without the float32 island.
  it.each(['srformer/srformer-x4', 'mosr/x1-dysample'])('%s loads and runs in fp16 within 1e-2 of fp32', async (id) => {
    const [suite, name] = id.split('/') as [string, string];
    const [file, bytes] = [...loadGolden(suite, name).files.entries()][0]!;
    const fp32 = (await convertBytes(new Uint8Array(bytes), file.endsWith('.safetensors') ? 'safetensors' : 'pth'))
      .onnx;
    const g = fp16Graph(fp32);
    const m = readOnnx(g.bytes);
    const range = m.nodes.find((n) => n.opType === 'Range')!;
    expect(m.nodes[m.nodes.indexOf(range) + 1]).toMatchObject({ opType: 'Cast', attrs: { to: ONNX_FLOAT16 } });
    const x = new Float32Array(3 * 32 * 32).map((_, i) => ((i * 7919) % 1000) / 1000);
    const a = await openRawModel(fp32, { threads: 2 });
    const h = await openRawModel(g.bytes, { threads: 2, optimization: 'basic' });
    try {
      const ya = [...(await a.run(x, [1, 3, 32, 32])).values()][0]!.data;
      const yh = [...(await h.run(x, [1, 3, 32, 32])).values()][0]!.data;
      expect(yh.length).toBe(ya.length);
      let max = 0;
      for (let i = 0; i < ya.length; i++) max = Math.max(max, Math.abs(ya[i]! - yh[i]!));
      expect(max).toBeLessThan(1e-2);
      expect(max).toBeGreaterThan(0);
    } finally {
      await a.release();
      await h.release();
    }
  });
});

describe('fp16 manifests of the bundled models', () => {
  it('sit beside the bundled files, belong to them and to the graph the converter builds now, and passed', async () => {
    for (const file of BUNDLED) {
      const manifest = await findFp16Manifest(file, []);
      expect(manifest, file).toMatchObject({ passed: true, set: 'Set5 + Set14 ×4', images: 19 });
      expect(manifest!.worstPsnrY).toBeGreaterThanOrEqual(FP16_QUALITY_BAR_DB);
      const built = await buildFp16(file, manifest);
      expect(built.manifest).toBe(manifest);
    }
  });

  it('a manifest of another fp32 file or of another fp16 graph is not trusted', async () => {
    const [general] = BUNDLED;
    const manifest = (await findFp16Manifest(general!, []))!;
    const copy = path.join(tmp, 'realesr-general-x4v3.onnx');
    const changed = new Uint8Array(readFileSync(general!));
    changed[changed.length - 1] = changed.at(-1)! ^ 1;
    await writeFile(copy, changed);
    await writeFile(path.join(tmp, 'realesr-general-x4v3.fp16.json'), JSON.stringify(manifest));
    // The fp32 file is not the one measured: no manifest.
    expect(await findFp16Manifest(copy, [])).toBeUndefined();
    // The figures were measured on another fp16 graph: the graph is built, its manifest dropped.
    const other: Fp16Manifest = { ...manifest, graphSha256: '0'.repeat(64) };
    const built = await buildFp16(general!, other);
    expect(built.manifest).toBeUndefined();
    expect(built.bytes.length).toBeGreaterThan(0);
  });

  it(`each is ≥ ${FP16_QUALITY_BAR_DB} dB PSNR-Y from fp32 on every Set5 image, no worse than its manifest's worst`, async () => {
    for (const file of BUNDLED) {
      const { manifest, perImage } = await measureFp16(file, set5, 'Set5 ×4');
      const report = perImage.map((x) => `${x.name} ${x.psnrY.toFixed(2)}`).join(', ');
      expect(manifest.worstPsnrY, `${path.basename(file)}: ${report}`).toBeGreaterThanOrEqual(FP16_QUALITY_BAR_DB);
      // Set5 is part of the manifest's set, so its worst image is no lower than the set's worst (same graph, inputs).
      const shipped = (await findFp16Manifest(file, []))!;
      expect(manifest.graphSha256).toBe(shipped.graphSha256);
      expect(manifest.worstPsnrY, report).toBeGreaterThanOrEqual(shipped.worstPsnrY - 0.01);
      // Not identical: the fp16 graph really holds its tensors in fp16 here (an all-fp32 run would score +∞ → 99).
      expect(manifest.worstPsnrY, report).toBeLessThan(99);
    }
  }, 120_000);
});
