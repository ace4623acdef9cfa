/**
 * GFPGANv1Clean .pth → ONNX in TypeScript, against PyTorch itself: a maintainer script
 * (support/gfpgan_reference.py, the published architecture) saves a random-weight checkpoint with the keys
 * of GFPGAN v1.3/v1.4 and its output on a fixed input into a committed golden file (support/golden.ts rebuilds
 * the checkpoint torch wrote, byte for byte); the converted graph must reproduce that output. The tests need no
 * Python; CRISP_MAKE_GOLDENS=1 remakes the goldens with PyTorch. The app itself never runs Python.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import * as ort from 'onnxruntime-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { convertAnyFile } from '../../engine/convert/convert.js';
import { GFPGAN_V1_UNSUPPORTED } from '../../engine/convert/architectures/gfpgan.js';
import { FACE_MODELS } from '../../engine/core/faces/faceModels.js';
import { fetchFaceModel } from '../../engine/convert/install/fetchFaceModel.js';
import {
  checkGoldenInput,
  generatedUniform,
  goldenPath,
  loadGolden,
  MAKE_GOLDENS,
  PYTHON,
  sampleOutput,
} from './support/golden.js';
import { writePthZip } from './support/torchWriters.js';
import { removeDir, tempDir } from '../helpers/engineHarness.js';
import { crispLines, runCli } from '../helpers/runCli.js';

const SCRIPT = path.join(import.meta.dirname, 'support', 'gfpgan_reference.py');

let dir: string;
beforeAll(async () => {
  dir = await tempDir('crisp-gfpgan-');
});
afterAll(async () => removeDir(dir));

/** The PyTorch reference: a checkpoint plus its output on a fixed input, in `sub` (from the golden `sub`). */
function reference(
  sub: string,
  size: number,
  styleFeatures: number,
  narrow: number,
  seed: number,
  tame = false,
): { pth: string; input: Float32Array; output: Float32Array; ours: (y: Float32Array) => Float32Array } {
  const out = path.join(dir, sub);
  mkdirSync(out, { recursive: true });
  if (MAKE_GOLDENS)
    execFileSync(
      PYTHON,
      [
        SCRIPT,
        out,
        goldenPath('gfpgan', sub),
        String(size),
        String(styleFeatures),
        String(narrow),
        String(seed),
        ...(tame ? ['tame'] : []),
      ],
      { stdio: 'pipe' },
    );
  const golden = loadGolden('gfpgan', sub);
  const input = generatedUniform(`${seed}/input`, 3 * size * size);
  checkGoldenInput('gfpgan', sub, golden, 'input', input);
  const pth = path.join(out, 'model.pth');
  writeFileSync(pth, golden.files.get('model.pth')!);
  const { data, stride } = golden.outputs.get('output')!;
  // Large outputs are kept every 4th row and column: Crisp's output is sampled alike before the comparison.
  return { pth, input, output: data, ours: (y) => sampleOutput(y, [1, 3, size, size], stride) };
}

async function runOnnx(model: Uint8Array | string, input: Float32Array, size: number): Promise<Float32Array> {
  const o: ort.InferenceSession.SessionOptions = { logSeverityLevel: 3 };
  const s =
    typeof model === 'string'
      ? await ort.InferenceSession.create(model, o)
      : await ort.InferenceSession.create(model, o);
  try {
    expect(s.inputNames).toEqual(['input']);
    const r = await s.run({ input: new ort.Tensor('float32', input, [1, 3, size, size]) });
    return r[s.outputNames[0]!]!.data as Float32Array;
  } finally {
    await s.release();
  }
}

function compare(a: Float32Array, b: Float32Array): { maxDiff: number; psnr: number } {
  let maxDiff = 0;
  let se = 0;
  for (let i = 0; i < a.length; i++) {
    const d = Math.abs(a[i]! - b[i]!);
    maxDiff = Math.max(maxDiff, d);
    se += d * d;
  }
  // Range [-1, 1] counts as 2, so the peak is 2² = 4.
  return { maxDiff, psnr: se === 0 ? Infinity : 10 * Math.log10(4 / (se / a.length)) };
}

describe('GFPGANv1Clean conversion against PyTorch', () => {
  it('matches upstream at 512² (all seven levels, SFT on half the channels, stored noise)', async () => {
    const ref = reference('narrow512', 512, 32, 0.0625, 2);
    const converted = await convertAnyFile(ref.pth);
    expect(converted.kind).toBe('face');
    expect(converted.description).toBe('GFPGANv1Clean face restorer (512×512, 7 levels, style 32)');
    const y = await runOnnx(converted.onnx, ref.input, 512);
    expect(y.length).toBe(3 * 512 * 512);
    const { maxDiff, psnr } = compare(ref.ours(y), ref.output);
    expect(maxDiff).toBeLessThanOrEqual(0.02);
    expect(psnr).toBeGreaterThanOrEqual(50);
  }, 120_000);

  it('matches upstream with the v1.3/v1.4 widths at 64² (style 512, full channel counts)', async () => {
    const ref = reference('wide64', 64, 512, 1, 5);
    const converted = await convertAnyFile(ref.pth);
    const { maxDiff, psnr } = compare(ref.ours(await runOnnx(converted.onnx, ref.input, 64)), ref.output);
    expect(maxDiff).toBeLessThanOrEqual(0.02);
    expect(psnr).toBeGreaterThanOrEqual(50);
  }, 120_000);

  it('matches upstream with the released GFPGAN v1.4 architecture (512², style 512, full widths; 350 MB of random weights)', async () => {
    const ref = reference('full', 512, 512, 1, 3);
    const converted = await convertAnyFile(ref.pth);
    expect(converted.description).toBe('GFPGANv1Clean face restorer (512×512, 7 levels, style 512)');
    const { maxDiff, psnr } = compare(ref.ours(await runOnnx(converted.onnx, ref.input, 512)), ref.output);
    expect(maxDiff).toBeLessThanOrEqual(0.02);
    expect(psnr).toBeGreaterThanOrEqual(50);
  }, 300_000);

  it('crisp models convert writes the face model, and models import --face installs the .pth', async () => {
    // Tamed ToRGB: import runs the model once and refuses one that answers far outside [-1, 1].
    const ref = reference('cli', 512, 32, 0.0625, 3, true);
    const out = path.join(dir, 'cli', 'face.onnx');
    const r = await runCli(['models', 'convert', ref.pth, out]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout.trim()).toMatch(
      /→ .*face\.onnx: GFPGANv1Clean face restorer \(512×512, 7 levels, style 32\) \([\d.]+ MB\); install it with "crisp models import .*face\.onnx --face"$/,
    );
    expect(compare(ref.ours(await runOnnx(out, ref.input, 512)), ref.output).maxDiff).toBeLessThanOrEqual(0.02);
    const models = path.join(dir, 'cli-models');
    const imp = await runCli(['models', 'import', ref.pth, '--face', '--name', 'gfpgan-test', '--dir', models]);
    expect(imp.code, imp.stdout + imp.stderr).toBe(0);
    expect(imp.stdout.trim()).toBe(
      `${ref.pth}: imported as face model custom:gfpgan-test → ${path.join(models, 'face', 'custom-gfpgan-test.onnx')}`,
    );

    // models fetch gfpgan-1.4's path, against a local server: download, sha256, convert, check, install under face/.
    const bytes = readFileSync(ref.pth);
    const server = http.createServer((_req, res) => {
      res.writeHead(200, { 'content-length': bytes.length, 'content-type': 'application/octet-stream' });
      res.end(bytes);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/GFPGANv1.4.pth`;
      const entry = {
        ...FACE_MODELS[0]!,
        download: {
          url,
          format: 'pth' as const,
          sha256: createHash('sha256').update(bytes).digest('hex'),
          size: bytes.length,
        },
      };
      const fetched = path.join(dir, 'fetched');
      const installed = await fetchFaceModel(entry, { modelsDir: fetched });
      expect(installed.path).toBe(path.join(fetched, 'face', 'gfpgan-1.4.onnx'));
      expect(compare(ref.ours(await runOnnx(installed.path, ref.input, 512)), ref.output).maxDiff).toBeLessThanOrEqual(
        0.02,
      );
      expect(readdirSync(path.join(fetched, '.downloads'))).toEqual([]);
      const wrong = { ...entry, download: { ...entry.download, sha256: '0'.repeat(64) } };
      const other = path.join(dir, 'fetched-wrong');
      await expect(fetchFaceModel(wrong, { modelsDir: other })).rejects.toThrow(
        /^sha256 mismatch for gfpgan-1\.4: .*nothing was installed$/,
      );
      expect(existsSync(path.join(other, 'face'))).toBe(false);
    } finally {
      await new Promise<void>((r) => server.close(() => r()));
    }
  }, 180_000);
});

describe('GFPGAN checkpoints that cannot be converted', () => {
  it('the original GFPGANv1 (custom CUDA ops) gets the clear refusal, and nothing is written', async () => {
    const pth = path.join(dir, 'GFPGANv1.pth');
    const t = (shape: number[]) => ({ shape, data: new Float32Array(shape.reduce((a, b) => a * b, 1)) });
    writeFileSync(
      pth,
      writePthZip(
        new Map([
          ['conv_body_first.0.weight', t([32, 3, 1, 1])],
          ['stylegan_decoder.style_convs.0.activate.bias', t([64])],
          ['condition_scale.0.0.weight', t([32, 32, 3, 3])],
        ]),
        { wrapper: 'params_ema' },
      ),
    );
    const out = path.join(dir, 'v1.onnx');
    const r = await runCli(['models', 'convert', pth, out]);
    expect(r.code).toBe(1);
    expect(crispLines(r.stderr)).toEqual([
      `crisp: error: GFPGANv1.pth could not be converted: ${GFPGAN_V1_UNSUPPORTED}`,
    ]);
    expect(existsSync(out)).toBe(false);
    const imp = await runCli(['models', 'import', pth, '--dir', path.join(dir, 'v1-models')]);
    expect(imp.code).toBe(1);
    expect(imp.stdout).toBe('');
    expect(imp.stderr).toBe(`${pth}: not imported: ${GFPGAN_V1_UNSUPPORTED}\n`);
  });

  it('a truncated checkpoint is a one-line error and leaves no output behind', async () => {
    const pth = path.join(dir, 'broken.pth');
    writeFileSync(pth, new Uint8Array([0x50, 0x4b, 0x03, 0x04, 1, 2, 3]));
    const outDir = path.join(dir, 'broken-out');
    mkdirSync(outDir);
    const r = await runCli(['models', 'convert', pth, path.join(outDir, 'x.onnx')]);
    expect(r.code).toBe(1);
    expect(crispLines(r.stderr)).toHaveLength(1);
    expect(crispLines(r.stderr)[0]).toMatch(/^crisp: error: broken\.pth could not be converted: /);
    expect(readdirSync(outDir)).toEqual([]);
  });
});
