/**
 * Where int8 variants of fp32 models live and how they are recognised. A variant is `<base>.int8.onnx`
 * plus `<base>.int8.json` (its manifest: which fp32 file it came from, by sha256, and the quality measured
 * when it was made). It is looked up beside the fp32 file first, then in the int8 cache folder (the fp32
 * file may sit in a read-only or shared folder). A manifest whose sha256 does not match the fp32 file on
 * disk is stale (the model was replaced) and is ignored.
 */
import { createHash } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { userModelsDir } from '../models/catalog.js';
import { readJson, writeFileAtomic, writeJsonAtomic } from '../atomicFile.js';

/** int8-vs-fp32 PSNR-Y (dB) a variant's worst held-out image must reach for `--precision auto` to pick it. */
export const INT8_QUALITY_BAR_DB = 40;
/** fp32 time ÷ int8 time a variant must reach, measured on this CPU kind, for `--precision auto` to pick it. */
export const INT8_SPEED_BAR = 1.8;

const cpuKindSchema = z.object({ model: z.string().optional(), int8Dot: z.array(z.string()) });

export const int8ManifestSchema = z.object({
  format: z.literal(1),
  source: z.object({
    file: z.string(),
    sha256: z.string().regex(/^[0-9a-f]{64}$/),
    bytes: z.number().int().nonnegative(),
  }),
  createdAt: z.string(),
  calibration: z.object({
    kind: z.enum(['folder', 'bundled', 'synthetic']),
    crops: z.number().int().positive(),
    folder: z.string().optional(),
  }),
  /** Activation range method that won the quality comparison. */
  method: z.string(),
  quantizedConvs: z.number().int().nonnegative(),
  totalConvs: z.number().int().nonnegative(),
  /** int8 against fp32 output on held-out crops, Y channel (BT.601), 8-bit outputs. */
  psnrYVsFp32: z.number(),
  /** The worst held-out crop; `passed` is decided on it. */
  worstCropPsnrY: z.number().optional(),
  evaluatedCrops: z.number().int().nonnegative(),
  /** Whether the worst held-out crop (or image, with `heldout`) reached INT8_QUALITY_BAR_DB when it was made. */
  passed: z.boolean(),
  /**
   * A held-out image set measured whole (the shipped variants: Set5 + Set14 ×4 LR, scripts/makeShippedInt8.ts);
   * when present, `passed` was decided on its worst image rather than on the held-out crops.
   */
  heldout: z
    .object({
      set: z.string(),
      images: z.number().int().positive(),
      worstPsnrY: z.number(),
      worstImage: z.string(),
      meanPsnrY: z.number(),
    })
    .optional(),
  /**
   * Speed measured when the variant was made: fp32 time ÷ int8 time (CPU time, one intra-op thread, the two
   * alternating on 256² tiles), and on which CPU kind. `auto` trusts it only on the same kind (precision.ts).
   */
  speed: z
    .object({
      fp32OverInt8: z.number().positive(),
      wallFp32OverInt8: z.number().positive(),
      tile: z.number().int().positive(),
      runs: z.number().int().positive(),
      cpu: cpuKindSchema,
    })
    .optional(),
  /** The techniques applied, in order (docs/models.md "int8 on the CPU"). */
  techniques: z.array(z.string()).optional(),
});
export type Int8Manifest = z.infer<typeof int8ManifestSchema>;

export interface Int8Variant {
  path: string;
  manifest: Int8Manifest;
}

/** The default int8 cache: `int8/` inside the user's models folder. */
export function int8CacheDir(env: NodeJS.ProcessEnv = process.env): string {
  return env.CRISP_INT8_DIR ? path.resolve(env.CRISP_INT8_DIR) : path.join(userModelsDir(env), 'int8');
}

export function int8FileNames(modelPath: string): { model: string; manifest: string } {
  const base = path.basename(modelPath).replace(/\.onnx$/i, '');
  return { model: `${base}.int8.onnx`, manifest: `${base}.int8.json` };
}

const hashes = new Map<string, { key: string; sha256: string }>();

/** sha256 of a file, memoised by (path, size, mtime) so a session start does not re-hash an unchanged file. */
export function fileSha256(file: string): string {
  const st = statSync(file);
  const key = `${st.size}:${st.mtimeMs}`;
  const known = hashes.get(file);
  if (known?.key === key) return known.sha256;
  const sha256 = createHash('sha256').update(readFileSync(file)).digest('hex');
  hashes.set(file, { key, sha256 });
  return sha256;
}

/** The int8 variant of an fp32 model file, or undefined when none (or only a stale one) exists. */
export async function findInt8Variant(
  modelPath: string,
  cacheDirs: readonly string[] = [int8CacheDir()],
): Promise<Int8Variant | undefined> {
  const names = int8FileNames(modelPath);
  let sha: string | undefined;
  for (const dir of [path.dirname(modelPath), ...cacheDirs]) {
    const raw = await readJson<unknown>(path.join(dir, names.manifest)).catch(() => undefined);
    const parsed = int8ManifestSchema.safeParse(raw);
    if (!parsed.success) continue;
    const file = path.join(dir, names.model);
    try {
      if (!statSync(file).isFile()) continue;
      sha ??= fileSha256(modelPath);
    } catch {
      continue;
    }
    if (parsed.data.source.sha256 === sha) return { path: file, manifest: parsed.data };
  }
  return undefined;
}

/** Writes the variant and then its manifest, each atomically, so a reader never pairs a manifest with half a model. */
export async function saveInt8Variant(
  dir: string,
  modelPath: string,
  bytes: Uint8Array,
  manifest: Int8Manifest,
): Promise<Int8Variant> {
  const names = int8FileNames(modelPath);
  const file = path.join(dir, names.model);
  await writeFileAtomic(file, bytes);
  await writeJsonAtomic(path.join(dir, names.manifest), manifest);
  return { path: file, manifest };
}
