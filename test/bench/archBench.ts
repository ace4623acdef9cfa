/**
 * Architecture bench: one row per imported architecture in its released configuration (random weights from
 * the test-only PyTorch references, converted by Crisp), fp32 on the CPU provider, on a 256×256 tile of a
 * real photo: milliseconds per tile and input megapixels per second. Building the checkpoints needs Debian's
 * python3-torch (as the conversion tests do); without it the section says so and skips.
 * `npm run bench -- --only arch` (CRISP_BENCH_QUICK=1: one timed run per row instead of three;
 * CRISP_BENCH_ARCH=DAT-light,SRFormer-light: only the rows whose label starts with one of those names).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as ort from 'onnxruntime-node';
import { convertModelFile } from '../../engine/convert/convert.js';
import { hasTorch, photoCrop, runReference } from '../convert/support/transformerReference.js';

const TILE = 256;

interface ArchRow {
  /** Row label: architecture and configuration. */
  label: string;
  /** The test-only reference that builds the checkpoint (test/convert/support). */
  script: string;
  /** Constructor config of the released model. */
  config: Record<string, unknown> & { in_chans: number };
}

/** Released configurations (the authors' ×4 option files). */
const ROWS: ArchRow[] = [
  {
    label: 'DAT ×4 (180 dim, 6×6 blocks, 8×32, ffn ×4)',
    script: 'dat_reference.py',
    config: datConfig({ expansion_factor: 4, split_size: [8, 32] }),
  },
  {
    label: 'DAT-S ×4 (180 dim, 6×6 blocks, 8×16, ffn ×2)',
    script: 'dat_reference.py',
    config: datConfig({ expansion_factor: 2, split_size: [8, 16] }),
  },
  {
    label: 'DAT-2 ×4 (180 dim, 6×6 blocks, 8×32, ffn ×2)',
    script: 'dat_reference.py',
    config: datConfig({ expansion_factor: 2, split_size: [8, 32] }),
  },
  {
    label: 'DAT-light ×4 (60 dim, 1×18 blocks, 8×32)',
    script: 'dat_reference.py',
    config: datConfig({
      embed_dim: 60,
      depth: [18],
      num_heads: [6],
      expansion_factor: 2,
      split_size: [8, 32],
      upsampler: 'pixelshuffledirect',
      resi_connection: '3conv',
    }),
  },
  {
    label: 'SRFormer ×4 (180 dim, 6×6 blocks, window 22)',
    script: 'srformer_reference.py',
    config: srformerConfig({}),
  },
  {
    label: 'SRFormer-light ×4 (60 dim, 4×6 blocks, window 16)',
    script: 'srformer_reference.py',
    config: srformerConfig({
      embed_dim: 60,
      depths: [6, 6, 6, 6],
      num_heads: [6, 6, 6, 6],
      window_size: 16,
      upsampler: 'pixelshuffledirect',
    }),
  },
];

function datConfig(over: Record<string, unknown>): ArchRow['config'] {
  return {
    in_chans: 3,
    embed_dim: 180,
    depth: [6, 6, 6, 6, 6, 6],
    num_heads: [6, 6, 6, 6, 6, 6],
    upscale: 4,
    upsampler: 'pixelshuffle',
    resi_connection: '1conv',
    img_size: 64,
    ...over,
  };
}

function srformerConfig(over: Record<string, unknown>): ArchRow['config'] {
  return {
    in_chans: 3,
    embed_dim: 180,
    depths: [6, 6, 6, 6, 6, 6],
    num_heads: [6, 6, 6, 6, 6, 6],
    window_size: 22,
    mlp_ratio: 2,
    upscale: 4,
    upsampler: 'pixelshuffle',
    resi_connection: '1conv',
    img_size: 64,
    ...over,
  };
}

export async function archBench(): Promise<void> {
  console.log(
    `\nArchitectures (imported checkpoints, released configurations, random weights; fp32, cpu provider, ${TILE}² tile)`,
  );
  if (!hasTorch) {
    console.log('skipped: building the checkpoints needs python3-torch');
    return;
  }
  const runs = process.env.CRISP_BENCH_QUICK === '1' ? 1 : 3;
  const pick = process.env.CRISP_BENCH_ARCH?.split(',').filter(Boolean);
  const rows = pick ? ROWS.filter((r) => pick.some((p) => r.label.startsWith(`${p} `))) : ROWS;
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'crisp-arch-bench-'));
  try {
    const input = await photoCrop({ name: 'tile', image: 'set14/baboon.png', width: TILE, height: TILE }, 3);
    console.log(`${'architecture'.padEnd(50)} ${'ms / tile'.padStart(9)} ${'MP/s'.padStart(8)}`);
    for (const [i, row] of rows.entries()) {
      const id = `row${i}`;
      const refs = await runReference(
        row.script,
        tmp,
        [{ id, seed: i + 1, config: row.config, inputs: [] }],
        () => row.config.in_chans,
        () => 1,
      );
      const converted = await convertModelFile(refs.get(id)!.pth);
      const session = await ort.InferenceSession.create(converted.onnx, {
        executionProviders: ['cpu'],
        logSeverityLevel: 3,
      });
      try {
        const feed = { [session.inputNames[0]!]: new ort.Tensor('float32', input, [1, 3, TILE, TILE]) };
        await session.run(feed); // warm-up: first-run allocations are not counted
        const times: number[] = [];
        for (let r = 0; r < runs; r++) {
          const t0 = performance.now();
          await session.run(feed);
          times.push(performance.now() - t0);
        }
        const ms = times.sort((a, b) => a - b)[Math.floor(times.length / 2)]!;
        console.log(
          `${row.label.padEnd(50)} ${ms.toFixed(0).padStart(9)} ${((TILE * TILE) / 1e6 / (ms / 1000)).toFixed(4).padStart(8)}`,
        );
      } finally {
        await session.release();
      }
    }
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}
