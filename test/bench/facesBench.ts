/**
 * Face stage benchmark (`npm run bench -- --only faces`; alone: `node --import tsx test/bench/facesBench.ts`).
 * A group picture composed from the set5/set14 portraits (5 faces, 640×420) is upscaled ×2 on the CPU with
 * digital-art-4x, once plain and once with faces, each in its own child process so peak RSS is its own.
 * Reported: ms per face for detect (once per image, divided by the faces), align, restore, paste, next to the
 * plain upscale of the same image, and the extra peak memory. The restorer is an identity graph in the
 * face convention (GFPGAN's weights cannot be downloaded here), so "restore" is the cost of the stage around
 * the network, not of GFPGAN itself. The machine is shared and noisy: read ratios, not absolute times.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import sharp from 'sharp';
import { detectFaces, eyeDistance } from '../../engine/core/faces/detect.js';
import { createInference } from '../../engine/core/inference/index.js';
import { resolveModel } from '../../engine/core/models/catalog.js';
import { upscaleImage } from '../../engine/core/pipeline/index.js';
import { identityFaceModel, writeModel } from '../faces/support/faceModels.js';
import { composeGroup, photoPath } from '../faces/support/groupPhoto.js';
import { MODELS_DIR, ONNX_DIR } from '../helpers/paths.js';

const DETECTOR = path.join(MODELS_DIR, 'face', 'yunet_s_dynamic.onnx');
const SELF = fileURLToPath(import.meta.url);

interface ChildResult {
  totalMs: number;
  peakRssMb: number;
  faces: number;
  steps: Record<string, number>;
}

async function child(input: string, restorer: string | null): Promise<ChildResult> {
  const inference = createInference({ executionProvider: 'cpu' });
  const model = resolveModel('digital-art-4x', [ONNX_DIR]);
  const steps: Record<string, number> = { detect: 0, align: 0, restore: 0, paste: 0 };
  const out = path.join(path.dirname(input), `out-${restorer ? 'faces' : 'plain'}.png`);
  // Warm-up run so session creation is not counted.
  await upscaleImage(
    { input: { path: input }, inputName: 'group.png', model, scale: 2, format: 'png', compression: 0, outputPath: out },
    inference,
  );
  const t = performance.now();
  const r = await upscaleImage(
    {
      input: { path: input },
      inputName: 'group.png',
      model,
      scale: 2,
      format: 'png',
      compression: 0,
      outputPath: out,
      ...(restorer
        ? {
            faces: {
              detectorPath: DETECTOR,
              restorerPath: restorer,
              restorerName: 'identity',
              onTiming: (s, ms) => (steps[s]! += ms),
            },
          }
        : {}),
    },
    inference,
  );
  const totalMs = performance.now() - t;
  await inference.release();
  return { totalMs, peakRssMb: process.resourceUsage().maxRSS / 1024, faces: r.faces?.enhanced ?? 0, steps };
}

function runChild(input: string, restorer: string | null): ChildResult {
  const out = execFileSync(
    process.execPath,
    ['--import', 'tsx', SELF, '--face-child', JSON.stringify({ input, restorer })],
    { encoding: 'utf8' },
  );
  return JSON.parse(out.trim().split('\n').pop()!) as ChildResult;
}

export async function facesBench(): Promise<void> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'crisp-bench-faces-'));
  try {
    const inference = createInference({ executionProvider: 'cpu' });
    const det = await inference.graph(DETECTOR);
    const own = async (image: string) => {
      const { data, info } = await sharp(photoPath(image)).removeAlpha().raw().toBuffer({ resolveWithObject: true });
      const f = (
        await detectFaces(
          { data: new Uint8Array(data), width: info.width, height: info.height, channels: 3, depth: 8 },
          det,
        )
      )[0]!;
      return {
        centre: f.landmarks.reduce((a, q) => ({ x: a.x + q.x / 5, y: a.y + q.y / 5 }), { x: 0, y: 0 }),
        eyes: eyeDistance(f),
        width: info.width,
        height: info.height,
      };
    };
    const { png } = await composeGroup(
      { width: 640, height: 420 },
      [
        { image: 'set5/woman', width: 140, left: 20, top: 30 },
        { image: 'set14/lenna', width: 300, angle: 30, left: 150, top: 10 },
        { image: 'set5/baby', width: 200, left: 480, top: -40 },
        { image: 'set14/foreman', width: 200, angle: -20, left: -60, top: 230 },
        { image: 'set14/comic', width: 160, left: 380, top: 220 },
      ],
      own,
    );
    await inference.release();
    const input = path.join(dir, 'group.png');
    writeFileSync(input, png);
    const restorer = writeModel(dir, 'identity.onnx', identityFaceModel());
    const plain = runChild(input, null);
    const faces = runChild(input, restorer);
    const n = Math.max(1, faces.faces);
    console.log('\n## faces (CPU, group picture 640×420 with 5 faces, ×2 with digital-art-4x; identity restorer)');
    console.log(
      `plain upscale                 ${plain.totalMs.toFixed(0)} ms   peak RSS ${plain.peakRssMb.toFixed(0)} MB`,
    );
    console.log(
      `upscale + faces               ${faces.totalMs.toFixed(0)} ms   peak RSS ${faces.peakRssMb.toFixed(0)} MB   (${faces.faces} faces)`,
    );
    for (const s of ['detect', 'align', 'restore', 'paste']) {
      const ms = faces.steps[s]! / n;
      console.log(
        `  ${s.padEnd(8)} per face        ${ms.toFixed(1).padStart(7)} ms   ${((ms / plain.totalMs) * 100).toFixed(2)}% of the plain upscale`,
      );
    }
    console.log(
      `face stage / plain upscale    ${(((faces.totalMs - plain.totalMs) / plain.totalMs) * 100).toFixed(1)}% extra time (same run; noisy shared machine)`,
    );
    console.log(`extra peak memory             ${(faces.peakRssMb - plain.peakRssMb).toFixed(0)} MB`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const at = process.argv.indexOf('--face-child');
if (at >= 0) {
  const job = JSON.parse(process.argv[at + 1] ?? '{}') as { input: string; restorer: string | null };
  console.log(JSON.stringify(await child(job.input, job.restorer)));
} else if (process.argv[1] === SELF) {
  await facesBench();
}
