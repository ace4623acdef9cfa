/**
 * fp16 variants of fp32 models, for GPU providers. The variant's graph is built from the fp32 file when a session
 * opens (onnx/fp16Graph.ts: tens of milliseconds, deterministic), so what is kept is its manifest,
 * `<base>.fp16.json`, beside the fp32 file or in the fp16 cache folder: which fp32 file it came from and which
 * fp16 graph (both by sha256), the PSNR-Y measured against fp32, and whether it passed FP16_QUALITY_BAR_DB. A
 * manifest whose fp32 sha256 does not match the file is stale (the model was replaced); one whose graph sha256
 * does not match what the converter builds now measured another graph, so its figures are not trusted.
 */
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import { readJson, writeJsonAtomic } from '../atomicFile.js';
import { userModelsDir } from '../models/catalog.js';
import { fp16Graph } from '../onnx/fp16Graph.js';
import { fileSha256 } from './int8Variant.js';

/** Worst image's PSNR-Y (dB) of fp16 against fp32 for `--precision auto` to run fp16 on a GPU provider (issue 37). */
export const FP16_QUALITY_BAR_DB = 50;

export const fp16ManifestSchema = z.object({
  format: z.literal(1),
  source: z.object({
    file: z.string(),
    sha256: z.string().regex(/^[0-9a-f]{64}$/),
    bytes: z.number().int().nonnegative(),
  }),
  /** sha256 of the fp16 graph the figures were measured on (what fp16Graph builds from the source). */
  graphSha256: z.string().regex(/^[0-9a-f]{64}$/),
  createdAt: z.string(),
  /** The images, 8-bit outputs of fp32 and fp16 compared on Y (BT.601), 4-pixel border. */
  set: z.string(),
  images: z.number().int().positive(),
  worstPsnrY: z.number(),
  worstImage: z.string(),
  meanPsnrY: z.number(),
  /** Where the fp16 graph ran for the figures, and how (e.g. onnxruntime CPU: fp16 tensors, fp32 arithmetic). */
  measuredOn: z.string(),
  /** Whether the worst image reached FP16_QUALITY_BAR_DB. */
  passed: z.boolean(),
});
export type Fp16Manifest = z.infer<typeof fp16ManifestSchema>;

/** The default fp16 cache: `fp16/` inside the user's models folder (the fp32 file may sit in a read-only one). */
export function fp16CacheDir(env: NodeJS.ProcessEnv = process.env): string {
  return env.CRISP_FP16_DIR ? path.resolve(env.CRISP_FP16_DIR) : path.join(userModelsDir(env), 'fp16');
}

export function fp16ManifestName(modelPath: string): string {
  return `${path.basename(modelPath).replace(/\.onnx$/i, '')}.fp16.json`;
}

/** The measured fp16 manifest of an fp32 model file, or undefined when none (or only a stale one) exists. */
export async function findFp16Manifest(
  modelPath: string,
  cacheDirs: readonly string[] = [fp16CacheDir()],
): Promise<Fp16Manifest | undefined> {
  let sha: string | undefined;
  for (const dir of [path.dirname(modelPath), ...cacheDirs]) {
    const raw = await readJson<unknown>(path.join(dir, fp16ManifestName(modelPath))).catch(() => undefined);
    const parsed = fp16ManifestSchema.safeParse(raw);
    if (!parsed.success) continue;
    try {
      sha ??= fileSha256(modelPath);
    } catch {
      return undefined;
    }
    if (parsed.data.source.sha256 === sha) return parsed.data;
  }
  return undefined;
}

export const sha256Of = (bytes: Uint8Array): string => createHash('sha256').update(bytes).digest('hex');

/**
 * The fp16 graph of a model file, and whether the manifest's figures belong to it. A manifest measured on another
 * graph (the converter changed since) is dropped: the caller then treats the variant as unmeasured.
 */
export async function buildFp16(
  modelPath: string,
  manifest: Fp16Manifest | undefined,
): Promise<{ bytes: Uint8Array; manifest?: Fp16Manifest }> {
  const { bytes } = fp16Graph(new Uint8Array(await readFile(modelPath)));
  if (!manifest || manifest.graphSha256 !== sha256Of(bytes)) return { bytes };
  return { bytes, manifest };
}

export async function saveFp16Manifest(dir: string, modelPath: string, manifest: Fp16Manifest): Promise<string> {
  const file = path.join(dir, fp16ManifestName(modelPath));
  await writeJsonAtomic(file, manifest);
  return file;
}
