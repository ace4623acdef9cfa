/**
 * The metadata policy on both output paths of the pipeline: an output held in memory and one streamed from a
 * disk raster (encodeDiskRaster, where EXIF and IPTC are spliced into the container's head) carry the same
 * EXIF, ICC, XMP (with the provenance record) and IPTC; strip leaves none on either. A fake ×4 network keeps it
 * fast; the model does not matter to metadata.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Inference, ModelSession } from '../../engine/core/inference/index.js';
import { resolveModel, type ResolvedModel } from '../../engine/core/models/catalog.js';
import { upscaleImage } from '../../engine/core/pipeline/index.js';
import { readProvenance } from '../../engine/core/pipeline/metadata.js';
import { FAST_MODEL } from '../helpers/engineHarness.js';
import { exiftool } from '../helpers/exiftool.js';
import { IMAGES_DIR, MODELS_DIR } from '../helpers/paths.js';

const model = resolveModel(FAST_MODEL, [MODELS_DIR]);

/** Nearest-neighbour ×4. */
const session: ModelSession = {
  model: model as ResolvedModel,
  provider: 'cpu',
  scale: 4,
  async run(input: Float32Array, _n: number, h: number, w: number) {
    const out = new Float32Array(3 * 16 * h * w);
    for (let c = 0; c < 3; c++)
      for (let y = 0; y < 4 * h; y++)
        for (let x = 0; x < 4 * w; x++)
          out[c * 16 * h * w + y * 4 * w + x] = input[c * h * w + (y >> 2) * w + (x >> 2)]!;
    return { data: out, dims: [1, 3, 4 * h, 4 * w] };
  },
};
const inference = {
  requested: 'cpu',
  session: async () => session,
  release: async () => undefined,
} as unknown as Inference;

let tmp: string;
let input: string;
beforeAll(async () => {
  tmp = await mkdtemp(path.join(os.tmpdir(), 'crisp-md-stream-'));
  input = path.join(tmp, 'in.jpg');
  await sharp(path.join(IMAGES_DIR, 'set14', 'baboon.png'))
    .extract({ left: 100, top: 80, width: 60, height: 40 })
    .withIccProfile('p3')
    .withExif({ IFD0: { Make: 'Streamed camera' } })
    .jpeg({ quality: 95 })
    .toFile(input);
  await exiftool(['-q', '-overwrite_original', '-IPTC:Keywords=tide', '-XMP-dc:Rights=CC0', input]);
});
afterAll(async () => rm(tmp, { recursive: true, force: true }));

const provenance = {
  software: 'Crisp',
  version: '0.1.0',
  model: FAST_MODEL,
  scale: 2,
  passes: 1,
  face: false,
  date: '2026-01-02T03:04:05.000Z',
};

describe('metadata on the in-memory and the streamed output path', () => {
  it('carries the same EXIF, ICC, XMP with provenance and IPTC, and strip leaves none', async () => {
    const inputIcc = (await sharp(input).metadata()).icc!;
    for (const format of ['jpg', 'png', 'webp'] as const) {
      for (const outputMode of ['memory', 'disk'] as const) {
        const outputPath = path.join(tmp, `keep-${outputMode}.${format}`);
        await upscaleImage(
          {
            input: { path: input },
            inputName: 'in.jpg',
            model,
            scale: 2,
            format,
            compression: 0,
            outputPath,
            outputMode,
            metadata: { policy: 'keep', provenance },
          },
          inference,
        );
        const m = await sharp(outputPath).metadata();
        const what = `${format} ${outputMode}`;
        expect([m.width, m.height], what).toEqual([120, 80]);
        expect(m.exif?.toString('latin1'), what).toContain('Streamed camera');
        expect(m.icc?.equals(inputIcc), what).toBe(true);
        const xmp = m.xmp?.toString('utf8') ?? '';
        expect(xmp, what).toContain('CC0');
        expect(readProvenance(xmp), what).toEqual({
          Software: 'Crisp',
          Version: '0.1.0',
          Model: FAST_MODEL,
          Scale: '2',
          Passes: '1',
          Face: 'False',
          Date: '2026-01-02T03:04:05.000Z',
        });
        if (format === 'jpg') expect(m.iptc?.toString('latin1'), what).toContain('tide');
        else expect(xmp, what).toMatch(/<dc:subject>\s*<rdf:Bag>\s*<rdf:li>tide<\/rdf:li>/);

        const stripped = path.join(tmp, `strip-${outputMode}.${format}`);
        await upscaleImage(
          {
            input: { path: input },
            inputName: 'in.jpg',
            model,
            scale: 2,
            format,
            compression: 0,
            outputPath: stripped,
            outputMode,
            metadata: { policy: 'strip' },
          },
          inference,
        );
        const s = await sharp(stripped).metadata();
        expect([s.exif, s.icc, s.xmp, s.iptc], what).toEqual([undefined, undefined, undefined, undefined]);
      }
      // The two paths give the same pixels.
      const a = await sharp(path.join(tmp, `keep-memory.${format}`))
        .raw()
        .toBuffer();
      const b = await sharp(path.join(tmp, `keep-disk.${format}`))
        .raw()
        .toBuffer();
      let d = 0;
      for (let i = 0; i < a.length; i++) d = Math.max(d, Math.abs(a[i]! - b[i]!));
      expect(d, format).toBeLessThanOrEqual(format === 'png' ? 0 : 8);
    }
  });
});
