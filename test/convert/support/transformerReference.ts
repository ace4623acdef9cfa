/**
 * Test-only: the PyTorch references of the transformer converters (swinir, hat, dat, srformer _reference.py) for
 * a list of cases on crops of real photos: the checkpoints they saved (.pth and .safetensors, random weights) and
 * PyTorch's outputs, rebuilt from the committed golden files (support/golden.ts) into one temp dir per test file.
 * With CRISP_MAKE_GOLDENS=1 the script runs first (one python start per file) and rewrites the goldens.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, expect } from 'vitest';
import { convertModelFile, type ConvertedModel } from '../../../engine/convert/convert.js';
import { removeDir, tempDir } from '../../helpers/engineHarness.js';
import { IMAGES_DIR } from '../../helpers/paths.js';
import { runCli } from '../../helpers/runCli.js';
import { checkGoldenInput, goldenPath, loadGolden, MAKE_GOLDENS, PYTHON } from './golden.js';
import { maxAbsDiff, runOnnx } from './onnxRun.js';

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

export async function runReference(
  script: string,
  dir: string,
  cases: RefCase[],
  channelsOf: (c: RefCase) => number,
  scaleOf: (c: RefCase) => number,
): Promise<Map<string, RefResult>> {
  const suite = path.basename(script, '_reference.py');
  const jobs = [];
  const crops = new Map<string, Map<string, Float32Array>>();
  for (const c of cases) {
    const caseDir = path.join(dir, c.id);
    mkdirSync(caseDir, { recursive: true });
    const ch = channelsOf(c);
    const byName = new Map<string, Float32Array>();
    for (const inp of c.inputs) {
      const data = await photoCrop(inp, ch);
      byName.set(inp.name, data);
      writeFileSync(path.join(caseDir, `${inp.name}.bin`), data);
    }
    crops.set(c.id, byName);
    jobs.push({
      dir: caseDir,
      golden: goldenPath(suite, c.id),
      seed: c.seed,
      config: c.config,
      wrapper: c.wrapper ?? 'params',
      inputs: c.inputs.map((i) => ({ name: i.name, shape: [1, ch, i.height, i.width] })),
    });
  }
  if (MAKE_GOLDENS) {
    const jobsFile = path.join(dir, `${suite}-jobs.json`);
    writeFileSync(jobsFile, JSON.stringify(jobs));
    execFileSync(PYTHON, [path.join(import.meta.dirname, script), jobsFile], { stdio: 'pipe' });
  }
  const out = new Map<string, RefResult>();
  for (const c of cases) {
    const caseDir = path.join(dir, c.id);
    const golden = loadGolden(suite, c.id);
    for (const [name, bytes] of golden.files) writeFileSync(path.join(caseDir, name), bytes);
    const ch = channelsOf(c);
    const s = scaleOf(c);
    const inputs = new Map<string, { dims: number[]; data: Float32Array; expected: Float32Array }>();
    for (const i of c.inputs) {
      const data = crops.get(c.id)!.get(i.name)!;
      checkGoldenInput(suite, c.id, golden, i.name, data);
      const expected = golden.outputs.get(i.name)?.data;
      if (!expected || expected.length !== ch * i.height * i.width * s * s)
        throw new Error(`${c.id}/${i.name}: the reference output has an unexpected size`);
      inputs.set(i.name, { dims: [1, ch, i.height, i.width], data, expected });
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
 * The setup every transformer conversion test file shares: a temp dir for the file (removed after it) with every
 * case's checkpoints and outputs, from the goldens (or from one python run of `script` that remakes them).
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
    run.refs = await runReference(script, run.dir, cases, channelsOf, scaleOf);
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

export interface ImportCheck {
  /** The --name it is installed as. */
  name: string;
  licence: string;
  /** The registry's name, as the summary line starts ("DRCT ×2, …"). */
  architecture: string;
  scale: number;
  /** The detected description the first line quotes. */
  description: string;
  /** The reference input the installed model is run on. */
  input: string;
}

/**
 * `crisp models import` of a reference checkpoint (the converter tests' shared check): exit 0; the first line names
 * the file, the name, the scale and description and where it went; the summary line the architecture, scale,
 * parameters of the checkpoint, size of the converted graph and licence; the installed model equals PyTorch.
 */
export async function expectImportEqualsPyTorch(ref: RefResult, modelsDir: string, o: ImportCheck): Promise<void> {
  const r = await runCli(['models', 'import', ref.pth, '--name', o.name, '--dir', modelsDir, '--licence', o.licence]);
  expect(r.code, r.stdout + r.stderr).toBe(0);
  const installed = path.join(modelsDir, 'custom', `${o.name}.onnx`);
  const lines = r.stdout.trim().split('\n');
  expect(lines[0]).toBe(`${ref.pth}: imported as ${o.name} (x${o.scale}, ${o.description}) → ${installed}`);
  const literal = (v: string) => v.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  expect(lines[1]).toMatch(
    new RegExp(
      `^ {2}${literal(o.architecture)} ×${o.scale}, [\\d.]+ k parameters, [\\d.]+ MB, licence ${literal(o.licence)}$`,
    ),
  );
  const inp = ref.inputs.get(o.input)!;
  expect(maxAbsDiff((await runOnnx(installed, inp.data, inp.dims)).data, inp.expected)).toBeLessThanOrEqual(1e-4);
}

/**
 * A checkpoint `crisp models import` must refuse: exit 1, nothing on stdout, one sentence on stderr
 * (`FILE: not imported: MESSAGE`) with no stack trace, and nothing installed.
 */
export async function expectImportRefused(file: string, modelsDir: string, message: string): Promise<void> {
  const r = await runCli(['models', 'import', file, '--dir', modelsDir]);
  expect(r.code).toBe(1);
  expect(r.stdout).toBe('');
  expect(r.stderr.trim()).toBe(`${file}: not imported: ${message}`);
  expect(r.stderr).not.toMatch(/at .*\.js:\d+/);
  expect(existsSync(path.join(modelsDir, 'custom', `${path.basename(file, path.extname(file))}.onnx`))).toBe(false);
}
