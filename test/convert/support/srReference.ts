/**
 * Test-only driver for support/sr_reference.py (PyTorch reference implementations of SPAN, RealPLKSR, OmniSR, RCAN,
 * ESRGAN+, Real-CUGAN, MoSR and Swift-SRGAN):
 * cuts real photo patches, rebuilds each configuration's checkpoints (random weights, .pth and .safetensors as
 * torch wrote them) and reference outputs from the committed goldens (support/golden.ts), and compares Crisp's
 * conversion of both files with them. CRISP_MAKE_GOLDENS=1 runs the Python first (one process per test file).
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EsrganPlusSpec } from '../../../engine/convert/architectures/esrganPlus.js';
import type { MosrSpec } from '../../../engine/convert/architectures/mosr.js';
import type { OmniSrSpec } from '../../../engine/convert/architectures/omnisr.js';
import type { RcanSpec } from '../../../engine/convert/architectures/rcan.js';
import type { RealCuganSpec } from '../../../engine/convert/architectures/realcugan.js';
import type { RealPlksrSpec } from '../../../engine/convert/architectures/realplksr.js';
import type { SpanSpec } from '../../../engine/convert/architectures/span.js';
import type { SwiftSrganSpec } from '../../../engine/convert/architectures/swiftSrgan.js';
import { convertBytes } from '../../../engine/convert/convert.js';
import { removeDir, tempDir } from '../../helpers/engineHarness.js';
import { IMAGES_DIR } from '../../helpers/paths.js';
import { checkGoldenInput, goldenPath, loadGolden, MAKE_GOLDENS, PYTHON } from './golden.js';
import { maxAbsDiff, runOnnx } from './onnxRun.js';

const SCRIPT = path.join(import.meta.dirname, 'sr_reference.py');

export interface PatchSpec {
  image: string;
  left: number;
  top: number;
  w: number;
  h: number;
  /** 3: RGB; 1: grey (luma); 4: RGB plus a smooth alpha ramp (real RGBA photos are rare in test sets). */
  c: 1 | 3 | 4;
  /** For c = 4: a horizontal ramp (default) or fully opaque. */
  alpha?: 'ramp' | 'opaque';
}

export interface Patch extends PatchSpec {
  data: Float32Array;
}

/** A planar float32 0..1 [1, c, h, w] patch of a real photo. */
export async function photoPatch(p: PatchSpec): Promise<Patch> {
  const { data } = await sharp(path.join(IMAGES_DIR, p.image))
    .removeAlpha()
    .extract({ left: p.left, top: p.top, width: p.w, height: p.h })
    .raw()
    .toBuffer({ resolveWithObject: true });
  const n = p.w * p.h;
  const out = new Float32Array(p.c * n);
  for (let i = 0; i < n; i++) {
    const [r, g, b] = [data[i * 3]! / 255, data[i * 3 + 1]! / 255, data[i * 3 + 2]! / 255];
    if (p.c === 1) {
      out[i] = 0.299 * r + 0.587 * g + 0.114 * b;
      continue;
    }
    out[i] = r;
    out[n + i] = g;
    out[2 * n + i] = b;
    if (p.c === 4) out[3 * n + i] = p.alpha === 'opaque' ? 1 : (i % p.w) / (p.w - 1);
  }
  return { ...p, data: out };
}

export interface RefCase {
  name: string;
  arch: 'span' | 'realplksr' | 'omnisr' | 'rcan' | 'esrganplus' | 'realcugan' | 'mosr' | 'swiftsrgan';
  seed: number;
  wrapper: string | null;
  inputs: PatchSpec[];
  /** Architecture options passed to the Python constructor. */
  options: Record<string, unknown>;
  /** What the converter must detect. */
  expected: Partial<
    SpanSpec | RealPlksrSpec | OmniSrSpec | RcanSpec | EsrganPlusSpec | RealCuganSpec | MosrSpec | SwiftSrganSpec
  > & {
    kind: RefCase['arch'];
    scale: number;
  };
}

export interface RefResult {
  dir: string;
  pth: string;
  safetensors: string;
  inputs: Patch[];
  outputs: Float32Array[];
}

/** Every case's checkpoints and PyTorch outputs, under `root` (from the goldens, remade first if asked). */
export async function runReferences(root: string, cases: RefCase[]): Promise<Map<string, RefResult>> {
  const configs: unknown[] = [];
  const results = new Map<string, RefResult>();
  for (const c of cases) {
    const dir = path.join(root, c.name);
    mkdirSync(dir, { recursive: true });
    const inputs = await Promise.all(c.inputs.map(photoPatch));
    const files = inputs.map((p, i) => {
      const file = path.join(dir, `in${i}.bin`);
      writeFileSync(file, new Uint8Array(p.data.buffer, p.data.byteOffset, p.data.byteLength));
      return { file, c: p.c, h: p.h, w: p.w };
    });
    const golden = goldenPath(c.arch, c.name);
    configs.push({ dir, golden, arch: c.arch, seed: c.seed, wrapper: c.wrapper, inputs: files, ...c.options });
    results.set(c.name, {
      dir,
      pth: path.join(dir, 'model.pth'),
      safetensors: path.join(dir, 'model.safetensors'),
      inputs,
      outputs: [],
    });
  }
  if (MAKE_GOLDENS) execFileSync(PYTHON, [SCRIPT, JSON.stringify(configs)], { stdio: 'pipe' });
  for (const c of cases) {
    const r = results.get(c.name)!;
    const golden = loadGolden(c.arch, c.name);
    for (const [name, bytes] of golden.files) writeFileSync(path.join(r.dir, name), bytes);
    r.outputs = r.inputs.map((p, i) => {
      checkGoldenInput(c.arch, c.name, golden, `in${i}`, p.data);
      return golden.outputs.get(`out${i}`)!.data;
    });
  }
  return results;
}

/**
 * Converts the case's .pth and .safetensors, checks the detected spec, and runs both graphs on every input:
 * each output must match PyTorch's shape and values (max abs diff ≤ 1e-4, on outputs of a real spread).
 */
export async function expectMatchesReference(c: RefCase, r: RefResult): Promise<number> {
  let worst = 0;
  for (const format of ['pth', 'safetensors'] as const) {
    const converted = await convertBytes(readFileSync(format === 'pth' ? r.pth : r.safetensors), format);
    expect(converted.spec).toMatchObject(c.expected);
    for (let i = 0; i < r.inputs.length; i++) {
      const p = r.inputs[i]!;
      const ours = await runOnnx(converted.onnx, p.data, [1, p.c, p.h, p.w]);
      const outC = (c.expected as { outChannels?: number }).outChannels ?? p.c;
      expect(ours.dims).toEqual([1, outC, p.h * c.expected.scale, p.w * c.expected.scale]);
      const ref = r.outputs[i]!;
      // The comparison proves something only if the output is not flat.
      const mean = ref.reduce((a, b) => a + b, 0) / ref.length;
      const std = Math.sqrt(ref.reduce((a, b) => a + (b - mean) ** 2, 0) / ref.length);
      expect(std).toBeGreaterThan(0.05);
      const d = maxAbsDiff(ours.data, ref);
      expect(d, `${c.name} ${format} input ${i}`).toBeLessThanOrEqual(1e-4);
      worst = Math.max(worst, d);
    }
  }
  return worst;
}

/** A test file's reference run: filled in by beforeAll, so read it inside tests only. */
export interface ReferenceSuite {
  root: string;
  refs: Map<string, RefResult>;
}

/**
 * The block every SPAN / RealPLKSR / OmniSR test file starts with: all of its cases' references in a temp dir
 * (removed after the file), then one test per case: both containers match PyTorch (max abs diff ≤ 1e-4).
 */
export function referenceSuite(arch: string, tempPrefix: string, cases: RefCase[]): ReferenceSuite {
  const suite: ReferenceSuite = { root: '', refs: new Map() };
  beforeAll(async () => {
    suite.root = await tempDir(tempPrefix);
    suite.refs = await runReferences(suite.root, cases);
  }, 120_000);
  afterAll(async () => removeDir(suite.root));

  describe(`${arch} conversion against PyTorch`, () => {
    it.each(cases.map((c) => [c.name, c] as const))(
      '%s',
      async (_name, c) => {
        const worst = await expectMatchesReference(c, suite.refs.get(c.name)!);
        expect(worst).toBeLessThanOrEqual(1e-4);
      },
      60_000,
    );
  });
  return suite;
}
