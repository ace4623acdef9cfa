/**
 * The model catalog: which open model stands behind each contract model name, and where its ONNX file is.
 * The data lives in resources/models/catalog.json (shipped with the app, also read by the model fetcher);
 * this module validates it once and resolves names to files on disk.
 */
import { existsSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { MODEL_NAMES, type CustomModelName, type ModelName } from '../../contract/index.js';
import { bundledModelsDir, ModelNotInstalledError, modelSearchDirs } from './modelFiles.js';

// Where model files live (light: no zod), kept importable from here.
export { bundledModelsDir, ModelNotInstalledError, modelSearchDirs, userModelsDir } from './modelFiles.js';

const MODEL_KINDS = ['photo', 'illustration', 'denoise'] as const;
const DOWNLOAD_FORMATS = ['pth', 'onnx', 'safetensors', 'zip'] as const;

const entrySchema = z.object({
  name: z.enum(MODEL_NAMES),
  title: z.string().min(1),
  description: z.string().min(1),
  model: z.string().min(1),
  architecture: z.string().min(1),
  scale: z.number().int().min(1).max(8),
  licence: z.string().min(1),
  source: z.url(),
  // A bare file name: it is joined onto search directories, so a path separator would escape them.
  file: z.string().regex(/^[\w.-]+\.onnx$/),
  download: z.object({
    url: z.url(),
    format: z.enum(DOWNLOAD_FORMATS),
    sha256: z
      .string()
      .regex(/^[0-9a-f]{64}$/)
      .nullable(),
    size: z.number().int().positive().nullable(),
    /**
     * What the download weighs, roughly (from the architecture's parameter count): shown as "about N MB"
     * before a download while the exact `size` (which the fetch verifies) is not recorded.
     */
    approxBytes: z.number().int().positive().optional(),
  }),
  kind: z.enum(MODEL_KINDS),
  photoRank: z.number(),
});

export type CatalogEntry = z.infer<typeof entrySchema>;

/**
 * A user-imported model (engine/core/models/taskModel.ts builds it from the custom registry) in the shape the
 * pipeline and inference read — name, open model, native scale — without catalog-only metadata.
 */
export interface CustomModelEntry {
  name: CustomModelName;
  title: string;
  /** What the model was imported from (its file name), used in messages like catalog entries' `model`. */
  model: string;
  architecture: string;
  /** Native scale measured when it was imported: 1, 2, 4 or 8 (the pipeline resizes from it). */
  scale: number;
  kind: 'custom';
  /** The side tiles are best a multiple of (window-attention models; tilingOf), absent = 1. */
  window?: number;
}

export interface ResolvedModel<E extends CatalogEntry | CustomModelEntry = CatalogEntry | CustomModelEntry> {
  entry: E;
  /** Absolute path of the ONNX file. */
  path: string;
}

/** `bundled`: the file found is the copy shipped inside the app (resources/models). */
export type ListedModel = CatalogEntry & { installed: boolean; path?: string; bundled?: boolean };

let cached: CatalogEntry[] | undefined;

export function loadCatalog(): CatalogEntry[] {
  if (cached) return cached;
  const file = path.join(bundledModelsDir(), 'catalog.json');
  const parsed = z.array(entrySchema).safeParse(JSON.parse(readFileSync(file, 'utf8')));
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new Error(`Invalid model catalog ${file}: ${issue?.path.join('.') ?? ''} ${issue?.message ?? ''}`);
  }
  const names = parsed.data.map((e) => e.name);
  const missing = MODEL_NAMES.filter((n) => !names.includes(n));
  if (missing.length > 0 || names.length !== MODEL_NAMES.length) {
    throw new Error(
      `Invalid model catalog ${file}: every model name must appear exactly once (missing: ${missing.join(', ') || 'none'})`,
    );
  }
  cached = parsed.data;
  return cached;
}

export function catalogEntry(name: ModelName): CatalogEntry {
  const entry = loadCatalog().find((e) => e.name === name);
  // loadCatalog guarantees every contract name is present.
  if (!entry) throw new Error(`Model '${name}' is missing from the catalog`);
  return entry;
}

const bundledFileSchema = z.object({
  // A relative path inside resources/models, at most one folder deep (face/…), never escaping it.
  file: z.string().regex(/^(?:[\w-]+\/)?[\w.-]+\.onnx$/),
  /** The catalog model name it provides, or "face-detector" for the YuNet detector the face stage needs. */
  model: z.union([z.enum(MODEL_NAMES), z.literal('face-detector')]),
  bytes: z.number().int().positive(),
  sha256: z.string().regex(/^[0-9a-f]{64}$/),
  licence: z.string().min(1),
  licenceFile: z.string().regex(/^(?:[\w-]+\/)?[\w.-]+\.txt$/),
});

export type BundledFile = z.infer<typeof bundledFileSchema>;

/**
 * The weights shipped inside the app (resources/models/bundled.json): what makes a fresh install work
 * offline. The files themselves are found like any other model file (bundledModelsDir is always searched);
 * the manifest is the record of what ships, with sizes, checksums and licences.
 */
export function loadBundledManifest(dir: string = bundledModelsDir()): BundledFile[] {
  const file = path.join(dir, 'bundled.json');
  const parsed = z.object({ files: z.array(bundledFileSchema) }).safeParse(JSON.parse(readFileSync(file, 'utf8')));
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new Error(`Invalid bundled model manifest ${file}: ${issue?.path.join('.') ?? ''} ${issue?.message ?? ''}`);
  }
  return parsed.data.files;
}

function findFile(file: string, dirs: string[]): string | undefined {
  for (const dir of dirs) {
    // Accept both <dir>/x.onnx and <dir>/onnx/x.onnx so a directory laid out like shared/models works as is.
    for (const candidate of [path.join(dir, file), path.join(dir, 'onnx', file)]) {
      try {
        if (existsSync(candidate) && statSync(candidate).isFile()) return candidate;
      } catch {
        // An unreadable directory is the same as a missing file here.
      }
    }
  }
  return undefined;
}

export function resolveModel(name: ModelName, dirs: string[] = modelSearchDirs()): ResolvedModel<CatalogEntry> {
  const entry = catalogEntry(name);
  const found = findFile(entry.file, dirs);
  if (!found) throw new ModelNotInstalledError(name, entry, dirs);
  return { entry, path: found };
}

export function listModels(dirs: string[] = modelSearchDirs()): ListedModel[] {
  return loadCatalog().map((entry) => {
    const found = findFile(entry.file, dirs);
    if (!found) return { ...entry, installed: false };
    const bundled = path.dirname(found) === bundledModelsDir();
    return { ...entry, installed: true, path: found, ...(bundled ? { bundled } : {}) };
  });
}

/** The best installed model for photos; when nothing is installed, the best overall (what to fetch first). */
export function defaultModel(dirs: string[] = modelSearchDirs()): ModelName {
  const byRank = [...listModels(dirs)].sort((a, b) => a.photoRank - b.photoRank);
  const best = byRank.find((m) => m.installed) ?? byRank[0];
  if (!best) throw new Error('The model catalog is empty');
  return best.name;
}
