/**
 * The PyTorch reference checks without PyTorch: committed golden files (test/convert/golden/<suite>/<case>.json
 * and .bin.gz) hold what a reference run produced — the checkpoints torch.save wrote, as literal segments plus
 * generated tensors, and PyTorch's outputs. This module rebuilds the checkpoints byte for byte (sha256 checked),
 * so the converter reads the very files torch wrote, and hands back the outputs. support/golden.py writes them
 * and documents the generator; `CRISP_MAKE_GOLDENS=1` (with PyTorch installed) makes a test file run its
 * Python reference again and rewrite its goldens (test/convert/README.md).
 */
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';

export const GOLDEN_DIR = path.resolve(import.meta.dirname, '..', 'golden');

/** Set by a maintainer with PyTorch installed: run the Python references and rewrite the goldens. */
export const MAKE_GOLDENS = process.env.CRISP_MAKE_GOLDENS === '1';

/**
 * The Python the maintainer scripts run with, only under CRISP_MAKE_GOLDENS (any python3 with torch and numpy,
 * e.g. Debian's python3-torch); `npm test` never starts it.
 */
export const PYTHON = process.env.CRISP_PYTHON ?? 'python3';

interface Generated {
  key: string;
  n: number;
  mean: number;
  std: number;
}
type Segment = ['lit', number, number] | ['gen', number];
interface GoldenFile {
  generated: Generated[];
  files: Record<string, { sha256: string; size: number; segments: Segment[] }>;
  inputs: Record<string, string>;
  outputs: Array<{
    name: string;
    shape: number[];
    dtype: 'f32' | 'u16';
    at: [number, number];
    min?: number;
    max?: number;
    stride?: number;
  }>;
}

export interface Golden {
  /** The checkpoints as torch wrote them, by file name (model.pth, model.safetensors). */
  files: Map<string, Buffer>;
  /** sha256 of each input the reference ran on, by name: the test's own input must hash the same. */
  inputs: Map<string, string>;
  /** `stride` > 1: every stride-th row and column of the output only (sampleOutput takes the same from ours). */
  outputs: Map<string, { shape: number[]; data: Float32Array; stride: number }>;
}

export const goldenPath = (suite: string, id: string): string => path.join(GOLDEN_DIR, suite, id);

const SQRT6 = Math.sqrt(6);

function mix32(x: number): number {
  x ^= x >>> 16;
  x = Math.imul(x, 0x7feb352d);
  x ^= x >>> 15;
  x = Math.imul(x, 0x846ca68b);
  return (x ^ (x >>> 16)) >>> 0;
}

function key32(key: string): number {
  let h = 0x811c9dc5;
  for (const b of Buffer.from(key, 'utf8')) h = Math.imul(h ^ b, 0x01000193) >>> 0;
  return h;
}

const unit = (counter: number, k: number): number => (mix32(mix32(counter) ^ k) >>> 8) / 16777216;

/** golden.py's normal(): n float32 values of the given mean and standard deviation, bit for bit. */
export function generatedNormal(key: string, n: number, mean: number, std: number): Float32Array {
  const k = key32(key);
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) out[i] = mean + std * ((unit(2 * i, k) + unit(2 * i + 1, k) - 1) * SQRT6);
  return out;
}

/** golden.py's uniform_pm1(): n float32 values uniform in [-1, 1). */
export function generatedUniform(key: string, n: number): Float32Array {
  const k = key32(key);
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) out[i] = unit(i, k) * 2 - 1;
  return out;
}

export const sha256 = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex');

function regenerateHint(suite: string): string {
  return `regenerate with CRISP_MAKE_GOLDENS=1 npx vitest run test/convert/${suite}.test.ts (needs PyTorch: see test/convert/README.md)`;
}

/** Reads and rebuilds one case's golden; a missing or stale golden is an error that says how to regenerate it. */
export function loadGolden(suite: string, id: string): Golden {
  const base = goldenPath(suite, id);
  if (!existsSync(`${base}.json`)) throw new Error(`no golden file ${base}.json: ${regenerateHint(suite)}`);
  const meta = JSON.parse(readFileSync(`${base}.json`, 'utf8')) as GoldenFile;
  const blob = gunzipSync(readFileSync(`${base}.bin.gz`));
  const lit = (at: number, len: number): Buffer => blob.subarray(at, at + len);
  const cache = new Map<number, Buffer>();
  const gen = (i: number): Buffer => {
    let b = cache.get(i);
    if (!b) {
      const g = meta.generated[i]!;
      const a = generatedNormal(g.key, g.n, g.mean, g.std);
      b = Buffer.from(a.buffer, a.byteOffset, a.byteLength);
      cache.set(i, b);
    }
    return b;
  };
  const files = new Map<string, Buffer>();
  for (const [name, f] of Object.entries(meta.files)) {
    const bytes = Buffer.concat(f.segments.map((s) => (s[0] === 'lit' ? lit(s[1], s[2]) : gen(s[1]))));
    if (bytes.length !== f.size || sha256(bytes) !== f.sha256)
      throw new Error(`${base}.json: rebuilt ${name} does not match the file torch wrote; ${regenerateHint(suite)}`);
    files.set(name, bytes);
  }
  const outputs = new Map<string, { shape: number[]; data: Float32Array; stride: number }>();
  for (const o of meta.outputs) {
    const raw = lit(o.at[0], o.at[1]);
    let data: Float32Array;
    if (o.dtype === 'f32') data = new Float32Array(new Uint8Array(raw).buffer);
    else {
      const q = new Uint16Array(new Uint8Array(raw).buffer);
      const step = (o.max! - o.min!) / 65535;
      data = Float32Array.from(q, (v) => o.min! + v * step);
    }
    outputs.set(o.name, { shape: o.shape, data, stride: o.stride ?? 1 });
  }
  return { files, inputs: new Map(Object.entries(meta.inputs)), outputs };
}

/** Fails when a test's input is not the one the golden was made from (a changed crop or decoder). */
export function checkGoldenInput(suite: string, id: string, golden: Golden, name: string, data: Float32Array): void {
  const want = golden.inputs.get(name);
  const got = sha256(new Uint8Array(data.buffer, data.byteOffset, data.byteLength));
  if (want !== got)
    throw new Error(
      `${suite}/${id}: input ${name} differs from the one the golden was made from; ${regenerateHint(suite)}`,
    );
}

/** Every stride-th row and column of an [n, c, h, w] output, as golden.py keeps a strided reference. */
export function sampleOutput(data: Float32Array, dims: readonly number[], stride: number): Float32Array {
  if (stride === 1) return data;
  const [n, c, h, w] = dims as [number, number, number, number];
  const sh = Math.ceil(h / stride);
  const sw = Math.ceil(w / stride);
  const out = new Float32Array(n * c * sh * sw);
  let k = 0;
  for (let p = 0; p < n * c; p++)
    for (let y = 0; y < h; y += stride) for (let x = 0; x < w; x += stride) out[k++] = data[(p * h + y) * w + x]!;
  return out;
}
