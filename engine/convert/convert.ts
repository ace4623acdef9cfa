/**
 * The converter's front door: any supported weights file (.pth/.pt/.ckpt zip or legacy,
 * .safetensors, ncnn .param+.bin, or an existing .onnx) → ONNX bytes plus what was detected.
 */
import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import type { ArchSpec, BuildOptions, DetectOptions } from './architectures/architecture.js';
import { identifyArchitecture, summarise } from './architectures/detect.js';
import { buildGfpganOnnx, looksLikeGfpgan } from './architectures/gfpgan.js';
import { describeSpec } from './architectures/registry.js';
import { isLegacyCheckpoint, readLegacyCheckpoint } from './checkpoint/legacyCheckpoint.js';
import { convertNcnn } from './ncnn.js';
import { readOnnx } from '../core/onnx/onnxReader.js';
import { readSafetensors, readSafetensorsMetadata } from './checkpoint/safetensors.js';
import { CheckpointError, type StateDict } from './checkpoint/stateDict.js';
import { isZip, readZipCheckpoint } from './checkpoint/zipCheckpoint.js';
import { CrispError } from '../contract/errorCatalog.js';

export type SourceFormat = 'pth' | 'safetensors' | 'ncnn' | 'onnx';

export interface ConvertedModel {
  onnx: Uint8Array;
  format: SourceFormat;
  /** The detected architecture; null for ncnn and ONNX inputs (translated / passed through as graphs). */
  spec: ArchSpec | null;
  description: string;
  /** Weights in the checkpoint (null for ncnn and ONNX inputs). */
  parameters: number | null;
  /** A .safetensors file's __metadata__ strings ({} otherwise). */
  metadata: Record<string, string>;
}

/** rgbPorts: wrap 1- and 4-channel models so they run on the pipeline's RGB tiles (imports do; comparisons don't). */
export interface ConvertOptions extends DetectOptions, BuildOptions {}

/** A catalog `bad-model-file` failure (engine/contract/errorCatalog.ts); the message says what and why. */
export class ConvertError extends CrispError {
  override readonly name = 'ConvertError';
  constructor(message: string) {
    super('bad-model-file', message);
  }
}

/** Reads a PyTorch checkpoint (zip or legacy) or safetensors file into float32 tensors. */
export async function readStateDict(bytes: Uint8Array, format: 'pth' | 'safetensors'): Promise<StateDict> {
  if (format === 'safetensors') return readSafetensors(bytes);
  if (isZip(bytes)) return readZipCheckpoint(bytes);
  if (isLegacyCheckpoint(bytes)) return readLegacyCheckpoint(bytes);
  throw new CheckpointError('not a PyTorch checkpoint (neither a zip archive nor a legacy pickle)');
}

export function convertStateDict(dict: StateDict, opts: ConvertOptions = {}): { onnx: Uint8Array; spec: ArchSpec } {
  const { architecture, spec } = identifyArchitecture(dict, opts);
  return { onnx: architecture.build(spec, dict, opts), spec };
}

export function formatOf(file: string): SourceFormat {
  const ext = path.extname(file).toLowerCase();
  if (ext === '.pth' || ext === '.pt' || ext === '.ckpt') return 'pth';
  if (ext === '.safetensors') return 'safetensors';
  if (ext === '.param' || ext === '.bin') return 'ncnn';
  if (ext === '.onnx') return 'onnx';
  throw new ConvertError(
    `${path.basename(file)}: unsupported file type ${ext || '(none)'}; expected .pth, .safetensors, .onnx or an ncnn .param/.bin pair`,
  );
}

/** What `crisp models convert` made: an upscaler (any format import understands) or a GFPGAN face restorer. */
export interface AnyConverted {
  onnx: Uint8Array;
  kind: 'upscaler' | 'face';
  description: string;
}

/** GFPGANv1Clean bytes (.pth / .safetensors) → the face-convention ONNX graph. */
export async function convertFaceBytes(bytes: Uint8Array, format: 'pth' | 'safetensors'): Promise<AnyConverted> {
  const dict = await readStateDict(bytes, format);
  if (!looksLikeGfpgan(dict)) throw new ConvertError(`not a GFPGAN face restorer: ${summarise(dict)}`);
  return faceFromDict(dict);
}

function faceFromDict(dict: StateDict): AnyConverted {
  const { onnx, spec } = buildGfpganOnnx(dict);
  return {
    onnx,
    kind: 'face',
    description: `GFPGANv1Clean face restorer (${spec.outSize}×${spec.outSize}, ${spec.levels} levels, style ${spec.styleFeatures})`,
  };
}

/** Any checkpoint `models import` understands, or a GFPGAN one, to ONNX (nothing installed). */
export async function convertAnyFile(file: string, opts: ConvertOptions = {}): Promise<AnyConverted> {
  const format = formatOf(file);
  if (format === 'onnx') throw new ConvertError(`${path.basename(file)} is already an ONNX model`);
  if (format === 'pth' || format === 'safetensors') {
    await assertSize(file, MAX_MODEL_FILE_BYTES);
    const bytes = await readFile(file);
    const dict = await readStateDict(bytes, format);
    if (looksLikeGfpgan(dict)) return faceFromDict(dict);
    const { onnx, spec } = convertStateDict(dict, opts);
    return { onnx, kind: 'upscaler', description: describeSpec(spec) };
  }
  const m = await convertModelFile(file, opts);
  return { onnx: m.onnx, kind: 'upscaler', description: m.description };
}

/** Converts bytes already in memory (used by fetch, which downloads before converting). */
export async function convertBytes(
  bytes: Uint8Array,
  format: Exclude<SourceFormat, 'ncnn'>,
  opts: ConvertOptions = {},
): Promise<ConvertedModel> {
  if (format === 'onnx') {
    const info = readOnnx(bytes);
    if (info.inputs.length !== 1 || info.outputs.length !== 1) {
      throw new ConvertError(
        `ONNX model must have one input and one output (has ${info.inputs.length} and ${info.outputs.length})`,
      );
    }
    return {
      onnx: bytes,
      format,
      spec: null,
      description: `ONNX (${info.nodes.length} nodes, opset ${info.opset})`,
      parameters: null,
      metadata: {},
    };
  }
  const dict = await readStateDict(bytes, format);
  const { onnx, spec } = convertStateDict(dict, opts);
  let parameters = 0;
  for (const t of dict.values()) parameters += t.data.length;
  const metadata = format === 'safetensors' ? readSafetensorsMetadata(bytes) : {};
  return { onnx, format, spec, description: describeSpec(spec), parameters, metadata };
}

/**
 * Weights are read whole, so their size is checked first: the largest real SR checkpoints are a few
 * hundred MB; an ncnn .param is a few KB of text.
 */
export const MAX_MODEL_FILE_BYTES = 2 * 1024 * 1024 * 1024;
export const MAX_NCNN_PARAM_BYTES = 16 * 1024 * 1024;

async function assertSize(file: string, max: number): Promise<void> {
  const { size } = await stat(file);
  if (size > max) {
    throw new ConvertError(
      `${path.basename(file)} is ${Math.round(size / 1048576)} MiB; model files larger than ${Math.round(max / 1048576)} MiB are refused`,
    );
  }
}

export async function convertModelFile(file: string, opts: ConvertOptions = {}): Promise<ConvertedModel> {
  const format = formatOf(file);
  if (format === 'ncnn') {
    const base = file.slice(0, -path.extname(file).length);
    await assertSize(`${base}.param`, MAX_NCNN_PARAM_BYTES);
    await assertSize(`${base}.bin`, MAX_MODEL_FILE_BYTES);
    const [param, bin] = await Promise.all([readFile(`${base}.param`, 'utf8'), readFile(`${base}.bin`)]);
    const { onnx, layerTypes } = convertNcnn(param, bin);
    return {
      onnx,
      format,
      spec: null,
      description: `ncnn model (${layerTypes.join(', ')})`,
      parameters: null,
      metadata: {},
    };
  }
  await assertSize(file, MAX_MODEL_FILE_BYTES);
  return convertBytes(await readFile(file), format, opts);
}
