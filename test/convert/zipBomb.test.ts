/**
 * Zip bombs given to `crisp models import` (importCustomModel, what the CLI calls): refused from the
 * central directory and data.pkl alone, before any storage is inflated — within 1 s and 100 MB. One
 * bomb declares its huge size honestly, the other lies (declares a few KB, inflates to 2.4 GB) and is
 * cut by the entry-size validation while streaming.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readZipCheckpoint } from '../../engine/convert/checkpoint/zipCheckpoint.js';
import { CheckpointError } from '../../engine/convert/checkpoint/stateDict.js';
import { importCustomModel } from '../../engine/convert/install/importModel.js';
import { pickleStateDict } from './support/torchWriters.js';

const MiB = 1024 * 1024;
/** 2.4 GB of float32 zeros, fits a 32-bit zip size field. */
const BOMB_ELEMENTS = 600 * MiB;

/** Deflate of `mib` MiB of zeros, built from one full-flushed 1 MiB segment repeated (each resets history). */
function zeroDeflate(mib: number): Buffer {
  const seg = zlib.deflateRawSync(Buffer.alloc(MiB), { finishFlush: zlib.constants.Z_FULL_FLUSH });
  return Buffer.concat([...Array.from({ length: mib }, () => seg), Buffer.from([0x03, 0x00])]);
}

interface Entry {
  name: string;
  data: Buffer;
  /** Declared uncompressed size (a bomb may lie). */
  size: number;
  deflated: boolean;
}

/** A zip whose entries may be deflated and whose declared sizes may lie (CRCs are zero: never reached). */
function zip(entries: Entry[]): Buffer {
  const locals: Buffer[] = [];
  const central: Buffer[] = [];
  let offset = 0;
  for (const e of entries) {
    const name = Buffer.from(e.name);
    const lh = Buffer.alloc(30);
    lh.writeUInt32LE(0x04034b50, 0);
    lh.writeUInt16LE(20, 4);
    lh.writeUInt16LE(e.deflated ? 8 : 0, 8);
    lh.writeUInt32LE(e.data.length, 18);
    lh.writeUInt32LE(e.size, 22);
    lh.writeUInt16LE(name.length, 26);
    locals.push(lh, name, e.data);
    const ch = Buffer.alloc(46);
    ch.writeUInt32LE(0x02014b50, 0);
    ch.writeUInt16LE(20, 4);
    ch.writeUInt16LE(20, 6);
    ch.writeUInt16LE(e.deflated ? 8 : 0, 10);
    ch.writeUInt32LE(e.data.length, 20);
    ch.writeUInt32LE(e.size, 24);
    ch.writeUInt16LE(name.length, 28);
    ch.writeUInt32LE(offset, 42);
    central.push(ch, name);
    offset += 30 + name.length + e.data.length;
  }
  const cd = Buffer.concat(central);
  const eocd = Buffer.alloc(22);
  eocd.writeUInt32LE(0x06054b50, 0);
  eocd.writeUInt16LE(entries.length, 8);
  eocd.writeUInt16LE(entries.length, 10);
  eocd.writeUInt32LE(cd.length, 12);
  eocd.writeUInt32LE(offset, 16);
  return Buffer.concat([...locals, cd, eocd]);
}

/** A pickle naming one conv weight whose storage holds `elements` float32 values. */
function pickleFor(elements: number): Buffer {
  const { pickle } = pickleStateDict(
    new Map([['conv_first.weight', { shape: [elements], data: { length: elements } as unknown as Float32Array }]]),
  );
  return pickle;
}

let dir: string;
let honest: Buffer;
let liar: Buffer;

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'crisp-zipbomb-'));
  const body = zeroDeflate((BOMB_ELEMENTS * 4) / MiB);
  const pkl = (n: number): Entry => {
    const p = pickleFor(n);
    return { name: 'archive/data.pkl', data: p, size: p.length, deflated: false };
  };
  honest = zip([pkl(BOMB_ELEMENTS), { name: 'archive/data/0', data: body, size: BOMB_ELEMENTS * 4, deflated: true }]);
  liar = zip([pkl(1024), { name: 'archive/data/0', data: body, size: 4096, deflated: true }]);
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function refusedCheaply(bytes: Buffer, file: string, message: RegExp): Promise<void> {
  await writeFile(path.join(dir, file), bytes);
  const rssBefore = process.resourceUsage().maxRSS * 1024;
  const t0 = performance.now();
  const err = await importCustomModel(path.join(dir, file), { modelsDir: path.join(dir, 'models') }).then(
    () => undefined,
    (e: unknown) => e,
  );
  const ms = performance.now() - t0;
  const grew = process.resourceUsage().maxRSS * 1024 - rssBefore;
  expect(err).toBeInstanceOf(CheckpointError);
  expect((err as Error).message).toMatch(message);
  // A bound on a hang (inflating the bomb), not a speed test: the memory bound above is the real check.
  expect(ms).toBeLessThan(30_000);
  expect(grew).toBeLessThan(100 * MiB);
}

describe('zip bomb checkpoints', () => {
  it('the bombs are what they claim: a few MB that inflate to 2.4 GB', () => {
    expect(honest.length).toBeLessThan(4 * MiB);
    expect(BOMB_ELEMENTS * 4).toBeGreaterThan(2e9);
  });

  it('refuses a bomb that declares its size from the central directory, inflating nothing', async () => {
    await refusedCheaply(honest, 'honest.pth', /declare more than .* uncompressed from a .* file .*likely zip bomb/);
  });

  it('cuts a bomb that lies about its size as soon as it inflates past the declared 4 KB', async () => {
    await refusedCheaply(liar, 'liar.pth', /data\/0 cannot be read from the zip|inflates beyond its declared/);
  });

  it('still reads the storages a real-sized checkpoint references', async () => {
    const { pickle } = pickleStateDict(new Map([['w', { shape: [4], data: new Float32Array([1, 2, 3, 4]) }]]));
    const data = Buffer.from(new Float32Array([1, 2, 3, 4]).buffer);
    const ok = zip([
      { name: 'archive/data.pkl', data: pickle, size: pickle.length, deflated: false },
      { name: 'archive/data/0', data: zlib.deflateRawSync(data), size: data.length, deflated: true },
      // An unreferenced entry is never inflated, so its (lying) size does not matter.
      { name: 'archive/data/junk', data: zeroDeflate(8), size: 1, deflated: true },
    ]);
    const dict = await readZipCheckpoint(ok);
    expect([...dict.get('w')!.data]).toEqual([1, 2, 3, 4]);
  });
});
