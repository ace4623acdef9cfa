import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { UnsupportedArchitectureError } from '../../engine/convert/architectures/architecture.js';
import { convertBytes } from '../../engine/convert/convert.js';
import { UnsafePickleError, unpickle } from '../../engine/convert/checkpoint/pickle.js';
import { SafetensorsError } from '../../engine/convert/checkpoint/safetensors.js';
import { CheckpointError } from '../../engine/convert/checkpoint/stateDict.js';
import { listCustomModels } from '../../engine/core/models/customModels.js';
import { importCustomModel } from '../../engine/convert/install/importModel.js';
import { installModel, ModelInstallError } from '../../engine/convert/install/installModel.js';
import { GraphBuilder } from '../../engine/convert/graph/onnxWriter.js';
import { MODELS_DIR } from '../helpers/paths.js';
import { writePthZip, writePthZipWithPickle, writeSafetensors, type TestStateDict } from './support/torchWriters.js';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'crisp-malformed-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const t = (shape: number[]): { shape: number[]; data: Float32Array } => ({
  shape,
  data: new Float32Array(shape.reduce((a, b) => a * b, 1)).fill(0.01),
});

/** A pickle that would run os.system('touch <marker>') if it were executed by Python's pickle. */
function maliciousPickle(marker: string): Buffer {
  const cmd = Buffer.from(`touch ${marker}`);
  const len = Buffer.alloc(4);
  len.writeUInt32LE(cmd.length);
  return Buffer.concat([
    Buffer.from([0x80, 2]),
    Buffer.from('cos\nsystem\n', 'latin1'),
    Buffer.from([0x58]),
    len,
    cmd,
    Buffer.from([0x85, 0x52, 0x2e]),
  ]);
}

async function modelsDirIsEmpty(): Promise<boolean> {
  const files = await readdir(dir, { recursive: true });
  return files.filter((f) => f.endsWith('.onnx')).length === 0;
}

describe('malformed and hostile inputs are refused clearly; nothing runs, nothing is installed', () => {
  it('a truncated zip checkpoint', async () => {
    const real = await readFile(path.join(MODELS_DIR, 'pth', 'realesr-animevideov3.pth'));
    await expect(convertBytes(real.subarray(0, real.length / 2), 'pth')).rejects.toThrow(CheckpointError);
    await expect(convertBytes(real.subarray(0, real.length / 2), 'pth')).rejects.toThrow(
      /not a readable PyTorch zip checkpoint \(the file may be truncated\)/,
    );
    const file = path.join(dir, 'truncated.pth');
    await writeFile(file, real.subarray(0, 100_000));
    await expect(importCustomModel(file, { modelsDir: dir })).rejects.toThrow(CheckpointError);
    expect(await modelsDirIsEmpty()).toBe(true);
    expect(await listCustomModels(dir)).toEqual([]);
  });

  it('a pickle naming os.system is refused by name and not executed', async () => {
    const marker = path.join(dir, 'pwned');
    const file = path.join(dir, 'evil.pth');
    await writeFile(file, writePthZipWithPickle(maliciousPickle(marker)));
    await expect(importCustomModel(file, { modelsDir: dir })).rejects.toThrow(UnsafePickleError);
    await expect(convertBytes(await readFile(file), 'pth')).rejects.toThrow(/global os\.system, which is not allowed/);
    expect(() => unpickle(maliciousPickle(marker))).toThrow(/os\.system/);
    // builtins.eval via STACK_GLOBAL (protocol 4) is refused the same way.
    const stackGlobal = Buffer.concat([
      Buffer.from([0x80, 4, 0x8c, 8]),
      Buffer.from('builtins'),
      Buffer.from([0x8c, 4]),
      Buffer.from('eval'),
      Buffer.from([0x93, 0x2e]),
    ]);
    expect(() => unpickle(stackGlobal)).toThrow(/builtins\.eval/);
    expect((await readdir(dir)).includes('pwned')).toBe(false);
    expect(await modelsDirIsEmpty()).toBe(true);
  });

  it('a safetensors header that lies about offsets', async () => {
    const good = writeSafetensors(new Map([['body.0.weight', t([4, 3, 3, 3])]]));
    const hlen = Number(good.readBigUInt64LE(0));
    const header = JSON.parse(good.subarray(8, 8 + hlen).toString()) as Record<string, { data_offsets: number[] }>;
    header['body.0.weight']!.data_offsets = [0, 4 * 108 + 4096];
    let json = JSON.stringify(header);
    while (json.length < hlen) json += ' ';
    const lying = Buffer.concat([good.subarray(0, 8), Buffer.from(json.slice(0, hlen)), good.subarray(8 + hlen)]);
    await expect(convertBytes(lying, 'safetensors')).rejects.toThrow(SafetensorsError);
    await expect(convertBytes(lying, 'safetensors')).rejects.toThrow(/lie outside the 432-byte data section/);
    const hugeHeader = Buffer.from(good);
    hugeHeader.writeBigUInt64LE(10n ** 12n, 0);
    await expect(convertBytes(hugeHeader, 'safetensors')).rejects.toThrow(/header claims 1000000000000 bytes/);
    const file = path.join(dir, 'lying.safetensors');
    await writeFile(file, lying);
    await expect(importCustomModel(file, { modelsDir: dir })).rejects.toThrow(SafetensorsError);
    expect(await modelsDirIsEmpty()).toBe(true);
  });

  it('an unsupported architecture names what it found', async () => {
    const swin: TestStateDict = new Map([
      ['conv_first.weight', t([8, 3, 3, 3])],
      ['layers.0.residual_group.blocks.0.attn.qkv.weight', t([24, 8])],
      ['layers.0.residual_group.blocks.0.attn.proj.weight', t([8, 8])],
    ]);
    const p = convertBytes(writePthZip(swin), 'pth');
    await expect(p).rejects.toThrow(UnsupportedArchitectureError);
    await expect(convertBytes(writePthZip(swin), 'pth')).rejects.toThrow(
      /unsupported architecture: 3 tensors, keys starting conv_first\.weight, layers\.0; found attention layers/,
    );
    const file = path.join(dir, 'swinir.safetensors');
    await writeFile(file, writeSafetensors(swin));
    await expect(importCustomModel(file, { modelsDir: dir })).rejects.toThrow(UnsupportedArchitectureError);
    expect(await modelsDirIsEmpty()).toBe(true);
  });

  it('a model that fails its smoke test (NaN output) is not installed', async () => {
    const g = new GraphBuilder('nan');
    const nan = g.weight('nan', [], new Float32Array([Number.NaN]));
    g.node('Mul', [g.resizeNearest('input', 2, 2), nan], {}, 'output');
    await expect(installModel(g.toBytes(), { modelsDir: dir, fileName: 'nan.onnx' })).rejects.toThrow(
      ModelInstallError,
    );
    await expect(installModel(g.toBytes(), { modelsDir: dir, fileName: 'nan.onnx' })).rejects.toThrow(
      /NaN or infinite/,
    );
    await expect(installModel(g.toBytes(), { modelsDir: dir, fileName: 'x2.onnx', expectedScale: 4 })).rejects.toThrow(
      /upscales ×2, expected ×4/,
    );
    expect(await readdir(dir)).toEqual([]);
  });
});
