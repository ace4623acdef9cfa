/**
 * Runs a test-only PyTorch reference (support/<arch>_reference.py, see ref_common.py) under Debian's
 * python3-torch: it builds the architecture from a config with random weights, saves model.pth and
 * model.safetensors, and writes its output on the given input. Results are cached per test run by
 * (script, config, seed, input), in a temporary directory the caller removes.
 */
import { execFile, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import sharp from 'sharp';

export const PYTHON = '/usr/bin/python3';
export const hasTorch = spawnSync(PYTHON, ['-c', 'import torch'], { stdio: 'ignore' }).status === 0;

export interface ReferenceRun {
  pth: string;
  safetensors: string;
  output: Float32Array;
  dims: number[];
}

const run = promisify(execFile);

export async function torchReference(
  cacheDir: string,
  script: string,
  config: Record<string, unknown> & { input: [number, number, number] },
  seed: number,
  input: Float32Array,
): Promise<ReferenceRun> {
  const key = createHash('sha256')
    .update(script)
    .update(JSON.stringify(config))
    .update(String(seed))
    .update(new Uint8Array(input.buffer, input.byteOffset, input.byteLength))
    .digest('hex')
    .slice(0, 16);
  const dir = path.join(cacheDir, key);
  const pth = path.join(dir, 'model.pth');
  if (!existsSync(path.join(dir, 'done.json'))) {
    await mkdir(dir, { recursive: true });
    await writeFile(path.join(dir, 'input.bin'), new Uint8Array(input.buffer, input.byteOffset, input.byteLength));
    const { stdout } = await run(
      PYTHON,
      [path.join(import.meta.dirname, script), dir, JSON.stringify(config), String(seed)],
      { maxBuffer: 1 << 20 },
    );
    await writeFile(path.join(dir, 'done.json'), stdout.trim().split('\n').pop()!);
  }
  const { dims } = JSON.parse(await readFile(path.join(dir, 'done.json'), 'utf8')) as { dims: number[] };
  const bytes = await readFile(path.join(dir, 'output.bin'));
  const output = new Float32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength));
  return { pth, safetensors: path.join(dir, 'model.safetensors'), output, dims };
}

/**
 * A width×height crop of a real photo as planar float32 0–1 pixels; with 4 channels, an alpha plane
 * derived from the photo (its inverted green channel), so an RGBA model sees a non-trivial alpha.
 */
export async function photoCrop(
  file: string,
  width: number,
  height: number,
  channels: 3 | 4 = 3,
  left = 0,
  top = 0,
): Promise<Float32Array> {
  const { data, info } = await sharp(file)
    .removeAlpha()
    .extract({ left, top, width, height })
    .raw()
    .toBuffer({ resolveWithObject: true });
  const n = width * height;
  const out = new Float32Array(channels * n);
  for (let i = 0; i < n; i++) {
    for (let c = 0; c < 3; c++) out[c * n + i] = data[i * info.channels + c]! / 255;
    if (channels === 4) out[3 * n + i] = 1 - data[i * info.channels + 1]! / 255;
  }
  return out;
}
