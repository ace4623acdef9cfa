/**
 * `crisp models import` refuses a hostile checkpoint with a sentence (issue 40, Low): a .pth whose tensor declares
 * 10^12 elements over a 4-element storage answered the raw "Invalid typed array length: 1000000000000".
 */
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/runCli.js';
import { writePthZip, writeSafetensors } from '../convert/support/torchWriters.js';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'crisp-import-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('crisp models import of a checkpoint whose shapes lie', () => {
  it.each([
    [
      'huge.pth',
      () => writePthZip(new Map([['conv_first.weight', { shape: [1_000_000, 1_000_000], data: new Float32Array(4) }]])),
      'a tensor declares shape 1000000×1000000 (1000000000000 elements); no model has a tensor above 268435456 elements, so the file is damaged or not a model',
    ],
    [
      'short.pth',
      () => writePthZip(new Map([['conv_first.weight', { shape: [64, 3, 3, 3], data: new Float32Array(4) }]])),
      'a tensor declares shape 64×3×3×3 (1728 elements) but its storage holds 4: the file is damaged',
    ],
  ])('%s: one sentence, nothing installed', async (name, bytes, sentence) => {
    const file = path.join(dir, name);
    await writeFile(file, bytes());
    const models = path.join(dir, `models-${name}`);
    const r = await runCli(['models', 'import', file, '--dir', models]);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toContain(`${file}: not imported: ${sentence}\n`);
    expect(`${r.stdout}${r.stderr}`).not.toMatch(/Invalid typed array length|\n\s+at /);
    expect(existsSync(path.join(models, 'custom'))).toBe(false);
  });

  it('a safetensors header declaring 10^12 elements is refused by its offsets, as before', async () => {
    const file = path.join(dir, 'huge.safetensors');
    const good = writeSafetensors(new Map([['conv_first.weight', { shape: [4], data: new Float32Array(4) }]]));
    const header = good.subarray(8, 8 + Number(good.readBigUInt64LE(0))).toString('utf8');
    const lying = header.replace('[4]', '[1000000,1000000]');
    const len = Buffer.alloc(8);
    len.writeBigUInt64LE(BigInt(Buffer.byteLength(lying)));
    await writeFile(file, Buffer.concat([len, Buffer.from(lying), good.subarray(8 + header.length)]));
    const r = await runCli(['models', 'import', file, '--dir', path.join(dir, 'models-st')]);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/not imported: .*conv_first\.weight data_offsets span 16 bytes but shape/);
    expect(`${r.stdout}${r.stderr}`).not.toMatch(/Invalid typed array length|\n\s+at /);
  });
});
