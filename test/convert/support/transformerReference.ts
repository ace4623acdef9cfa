/**
 * Test-only: runs the PyTorch reference scripts (swinir, hat, dat, srformer _reference.py) once per test file for
 * a list of cases, on crops of real photos, and returns the checkpoints they saved (.pth and .safetensors,
 * random weights) with PyTorch's outputs. Everything lives in one temp dir per run, so python starts once.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, expect } from 'vitest';
import { convertModelFile, type ConvertedModel } from '../../../engine/core/convert/convert.js';
import { removeDir, tempDir } from '../../helpers/engineHarness.js';
import { IMAGES_DIR } from '../../helpers/paths.js';
import { maxAbsDiff, runOnnx } from './onnxRun.js';

export const PYTHON = '/usr/bin/python3';
export const hasTorch = spawnSync(PYTHON, ['-c', 'import torch'], { stdio: 'ignore' }).status === 0;

export interface RefInput {
  name: string;
  /** A photo under shared/images, e.g. 'set14/baboon.png'. */
  image: string;
  width: number;
  height: number;
  left?: number;
  top?: number;
}

export interface RefCase {
  id: string;
  seed: number;
  /** Keyword arguments of the reference model's constructor. */
  config: Record<string, unknown>;
  /** The .pth wrapper key (params, params_ema). */
  wrapper?: string;
  inputs: RefInput[];
}

export interface RefResult {
  pth: string;
  safetensors: string;
  inputs: Map<string, { dims: number[]; data: Float32Array; expected: Float32Array }>;
}

/**
 * A crop of a real photo as planar float32 0..1 with `channels` planes: 1 = luma, 3 = RGB, 4 = RGB plus the
 * luma as alpha (the set images have none; a varying alpha tests the fourth channel's own path).
 */
export async function photoCrop(input: RefInput, channels: number): Promise<Float32Array> {
  const { data } = await sharp(path.join(IMAGES_DIR, input.image))
    .removeAlpha()
    .extract({ left: input.left ?? 0, top: input.top ?? 0, width: input.width, height: input.height })
    .raw()
    .toBuffer({ resolveWithObject: true });
  const n = input.width * input.height;
  const out = new Float32Array(channels * n);
  for (let i = 0; i < n; i++) {
    const [r, g, b] = [data[i * 3]! / 255, data[i * 3 + 1]! / 255, data[i * 3 + 2]! / 255];
    const luma = 0.299 * r + 0.587 * g + 0.114 * b;
    if (channels === 1) out[i] = luma;
    else {
      out[i] = r;
      out[n + i] = g;
      out[2 * n + i] = b;
      if (channels === 4) out[3 * n + i] = luma;
    }
  }
  return out;
}

const floats = (file: string) => new Float32Array(new Uint8Array(readFileSync(file)).buffer);

export async function runReference(
  script: string,
  dir: string,
  cases: RefCase[],
  channelsOf: (c: RefCase) => number,
  scaleOf: (c: RefCase) => number,
): Promise<Map<string, RefResult>> {
  const jobs = [];
  for (const c of cases) {
    const caseDir = path.join(dir, c.id);
    mkdirSync(caseDir, { recursive: true });
    const ch = channelsOf(c);
    for (const inp of c.inputs) writeFileSync(path.join(caseDir, `${inp.name}.bin`), await photoCrop(inp, ch));
    jobs.push({
      dir: caseDir,
      seed: c.seed,
      config: c.config,
      wrapper: c.wrapper ?? 'params',
      inputs: c.inputs.map((i) => ({ name: i.name, shape: [1, ch, i.height, i.width] })),
    });
  }
  const jobsFile = path.join(dir, `${path.basename(script, '.py')}-jobs.json`);
  writeFileSync(jobsFile, JSON.stringify(jobs));
  execFileSync(PYTHON, [path.join(import.meta.dirname, script), jobsFile], { stdio: 'pipe' });
  const out = new Map<string, RefResult>();
  for (const c of cases) {
    const caseDir = path.join(dir, c.id);
    const ch = channelsOf(c);
    const s = scaleOf(c);
    const inputs = new Map<string, { dims: number[]; data: Float32Array; expected: Float32Array }>();
    for (const i of c.inputs) {
      inputs.set(i.name, {
        dims: [1, ch, i.height, i.width],
        data: floats(path.join(caseDir, `${i.name}.bin`)),
        expected: floats(path.join(caseDir, `${i.name}.out.bin`)),
      });
      if (inputs.get(i.name)!.expected.length !== ch * i.height * i.width * s * s)
        throw new Error(`${c.id}/${i.name}: the reference output has an unexpected size`);
    }
    out.set(c.id, {
      pth: path.join(caseDir, 'model.pth'),
      safetensors: path.join(caseDir, 'model.safetensors'),
      inputs,
    });
  }
  return out;
}

/** A test file's reference run: filled in by beforeAll, so read it inside tests only. */
export interface ReferenceRun {
  dir: string;
  refs: Map<string, RefResult>;
}

/**
 * The setup every transformer conversion test file shares: a temp dir for the file (removed after it) and, where
 * torch is installed, one python run of `script` that builds every case's checkpoints and outputs.
 */
export function referenceRun(
  script: string,
  tempPrefix: string,
  cases: RefCase[],
  channelsOf: (c: RefCase) => number,
  scaleOf: (c: RefCase) => number,
  timeoutMs: number,
): ReferenceRun {
  const run: ReferenceRun = { dir: '', refs: new Map() };
  beforeAll(async () => {
    run.dir = await tempDir(tempPrefix);
    if (hasTorch) run.refs = await runReference(script, run.dir, cases, channelsOf, scaleOf);
  }, timeoutMs);
  afterAll(async () => removeDir(run.dir));
  return run;
}

export interface ReferenceCheck {
  /** What detection must find in the .pth (toMatchObject); the .safetensors must give the same spec. */
  spec: Record<string, unknown>;
  /** The exact description, where the test pins it. */
  description?: string;
  scale: number;
  /** The inputs compared with PyTorch; default all of the case's. */
  inputs?: string[];
  /**
   * A reference that barely moves would prove nothing: its max − min must exceed `spread`, and/or its
   * largest magnitude must exceed `peak` (each test keeps the bound it was written with).
   */
  spread?: number;
  peak?: number;
}

/**
 * The per-case body shared by the transformer conversion tests (SwinIR, HAT, DAT, SRFormer): converts the
 * case's .pth and .safetensors, which must detect the same spec and give byte-identical graphs (same tensors
 * from either container), then runs the graph on each input: PyTorch's dims, and max abs diff ≤ 1e-4.
 * Returns the .pth's conversion for a test's own checks.
 */
export async function expectMatchesPyTorch(id: string, ref: RefResult, check: ReferenceCheck): Promise<ConvertedModel> {
  const fromPth = await convertModelFile(ref.pth);
  const fromSt = await convertModelFile(ref.safetensors);
  expect(fromPth.spec).toMatchObject(check.spec);
  expect(fromSt.spec).toEqual(fromPth.spec);
  if (check.description !== undefined) expect(fromPth.description).toBe(check.description);
  expect(Buffer.from(fromSt.onnx).equals(Buffer.from(fromPth.onnx))).toBe(true);
  const names = check.inputs ?? [...ref.inputs.keys()];
  expect(names.length).toBeGreaterThan(0);
  for (const name of names) {
    const inp = ref.inputs.get(name)!;
    const y = await runOnnx(fromPth.onnx, inp.data, inp.dims);
    const [, ch, h, w] = inp.dims as [number, number, number, number];
    expect(y.dims, name).toEqual([1, ch, h * check.scale, w * check.scale]);
    if (check.spread !== undefined)
      expect(Math.max(...inp.expected) - Math.min(...inp.expected), name).toBeGreaterThan(check.spread);
    if (check.peak !== undefined) expect(Math.max(...inp.expected.map(Math.abs)), name).toBeGreaterThan(check.peak);
    expect(maxAbsDiff(y.data, inp.expected), `${id}/${name}`).toBeLessThanOrEqual(1e-4);
  }
  return fromPth;
}
