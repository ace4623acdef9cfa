/**
 * Face models: the catalog of fetchable face restorers (GFPGAN v1.3 / v1.4, converted to ONNX on fetch),
 * the YuNet detector they need, and resolution of a face model name (catalog name or `custom:N`) to files.
 *
 * Layout, in every model search directory: `face/<file>.onnx` (catalog restorers and the detector) and
 * `face/custom-<N>.onnx` (imported with `crisp models import FILE --face`). `face/` matches the layout of
 * shared/models, so a directory laid out like it works as is.
 */
import { existsSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { CrispError } from '../../contract/errorCatalog.js';

export const FACE_DIR = 'face';

export interface FaceCatalogEntry {
  name: string;
  title: string;
  file: string;
  licence: string;
  source: string;
  download: { url: string; format: 'pth' | 'onnx'; sha256: string; size: number };
}

/** GitHub release assets of TencentARC/GFPGAN (Apache-2.0 code and weights). */
export const FACE_MODELS: readonly FaceCatalogEntry[] = [
  {
    name: 'gfpgan-1.4',
    title: 'GFPGAN v1.4',
    file: 'gfpgan-1.4.onnx',
    licence: 'Apache-2.0',
    source: 'https://github.com/TencentARC/GFPGAN',
    download: {
      url: 'https://github.com/TencentARC/GFPGAN/releases/download/v1.3.0/GFPGANv1.4.pth',
      format: 'pth',
      sha256: 'e2cd4703ab14f4d01fd1383a8a8b266f9a5833dacee8e6a79d3bf21a1b6be5ad',
      size: 348632874,
    },
  },
  {
    name: 'gfpgan-1.3',
    title: 'GFPGAN v1.3',
    file: 'gfpgan-1.3.onnx',
    licence: 'Apache-2.0',
    source: 'https://github.com/TencentARC/GFPGAN',
    download: {
      url: 'https://github.com/TencentARC/GFPGAN/releases/download/v1.3.0/GFPGANv1.3.pth',
      format: 'pth',
      sha256: 'c953a88f2727c85c3d9ae72e2bd4846bbaf59fe6972ad94130e23e7017524a70',
      size: 348632874,
    },
  },
];

/** Detector files, preferred first: the dynamic-size YuNet, then OpenCV Zoo's fixed 640×640 one. */
export const DETECTOR_FILES = ['yunet_s_dynamic.onnx', 'yunet_s_640_640.onnx'] as const;

export interface ResolvedFaceModel {
  /** Catalog name or custom:N. */
  name: string;
  restorerPath: string;
  detectorPath: string;
}

/**
 * The ways to get a face model that exist in this version. (`crisp models fetch gfpgan-1.4` joins them once
 * the GFPGAN converter lands; FACE_MODELS already carries its release URL, sha256 and size.)
 */
export const HOW_TO_GET_A_FACE_MODEL =
  'Get one with "crisp models fetch gfpgan-1.4", or import one with "crisp models import FILE --face" (a GFPGAN v1.3/v1.4 .pth, or an ONNX face restorer: 1×3×512×512 RGB in [-1, 1]).';

/** A catalog `face-model-missing` failure (engine/contract/errorCatalog.ts); the message says what and why. */
export class FaceModelMissingError extends CrispError {
  override readonly name = 'FaceModelMissingError';
  constructor(message: string) {
    super('face-model-missing', message);
  }
}

function findIn(dirs: readonly string[], file: string): string | undefined {
  for (const dir of dirs) {
    for (const candidate of [path.join(dir, FACE_DIR, file), path.join(dir, file)]) {
      try {
        if (existsSync(candidate) && statSync(candidate).isFile()) return candidate;
      } catch {
        // Unreadable: treated as missing.
      }
    }
  }
  return undefined;
}

export function customFaceFile(name: string): string {
  return `custom-${name}.onnx`;
}

export function findDetector(dirs: readonly string[]): string | undefined {
  for (const f of DETECTOR_FILES) {
    const found = findIn(dirs, f);
    if (found) return found;
  }
  return undefined;
}

/** Installed face restorers, catalog ones first (best first), then custom ones by name. */
export function installedFaceModels(dirs: readonly string[]): Array<{ name: string; path: string }> {
  const out: Array<{ name: string; path: string }> = [];
  for (const e of FACE_MODELS) {
    const p = findIn(dirs, e.file);
    if (p) out.push({ name: e.name, path: p });
  }
  const seen = new Set<string>();
  for (const dir of dirs) {
    let names: string[] = [];
    try {
      names = readdirSync(path.join(dir, FACE_DIR));
    } catch {
      continue;
    }
    for (const f of names.sort()) {
      const m = /^custom-([A-Za-z0-9][\w.-]{0,63})\.onnx$/.exec(f);
      if (m && !seen.has(m[1]!)) {
        seen.add(m[1]!);
        out.push({ name: `custom:${m[1]}`, path: path.join(dir, FACE_DIR, f) });
      }
    }
  }
  return out;
}

/**
 * Resolves a face model by name (undefined: the best installed one) and the detector beside it. Throws a
 * FaceModelMissingError that says what is missing and the two ways to get a model.
 */
export function resolveFaceModel(name: string | undefined, dirs: readonly string[]): ResolvedFaceModel {
  const installed = installedFaceModels(dirs);
  let chosen: { name: string; path: string } | undefined;
  if (name === undefined) {
    chosen = installed[0];
    if (!chosen)
      throw new FaceModelMissingError(
        `Face enhancement needs a face model and none is installed. ${HOW_TO_GET_A_FACE_MODEL}`,
      );
  } else {
    chosen = installed.find((m) => m.name === name);
    if (!chosen) {
      const known = FACE_MODELS.some((e) => e.name === name) || name.startsWith('custom:');
      const have = installed.length > 0 ? ` Installed face models: ${installed.map((m) => m.name).join(', ')}.` : '';
      throw new FaceModelMissingError(
        known
          ? `The face model "${name}" is not installed.${have} ${HOW_TO_GET_A_FACE_MODEL}`
          : `"${name}" is not a face model (face models: ${FACE_MODELS.map((e) => e.name).join(', ')}, or custom:NAME for an imported one).${have}`,
      );
    }
  }
  const detectorPath = findDetector(dirs);
  if (!detectorPath) {
    throw new FaceModelMissingError(
      `Face enhancement needs the YuNet face detector and none was found: put ${DETECTOR_FILES[0]} (or OpenCV Zoo's face_detection_yunet_2023mar.onnx renamed ${DETECTOR_FILES[1]}; MIT) in a models folder's ${FACE_DIR}/ folder.`,
    );
  }
  return { name: chosen.name, restorerPath: chosen.path, detectorPath };
}
