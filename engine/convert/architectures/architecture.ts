/**
 * What every architecture module exports: one `Architecture` object (spandrel's shape). `registry.ts` lists them
 * in detection order; nothing else names an architecture. This file imports no architecture, so each of them can
 * import it.
 */
import type { StateDict, Tensor } from '../checkpoint/stateDict.js';
import { CrispError } from '../../contract/errorCatalog.js';

/** What every detected configuration has; each architecture's spec adds its own hyper-parameters. */
export interface ArchSpec {
  /** The architecture's `kind`: written into the ONNX doc string, so never renamed. */
  kind: string;
  inChannels: number;
  outChannels: number;
  scale: number;
}

/**
 * What the tile planner needs to know: the side an input must be a multiple of (the graph pads inside, so
 * tiles that already are waste nothing), the smallest side it accepts, and the CPU time per input pixel relative
 * to SRVGGNetCompact at the released sizes (`npm run bench -- --only arch`, two runs on 2026-11-25, averaged and
 * rounded; figures in docs/models.md).
 */
export interface ArchTiling {
  window: number;
  minSide: number;
  relativeCost: number;
}

/** Tiling of a plain CNN: any tile size, one figure of cost. */
export const cnnTiling = (relativeCost: number): ArchTiling => ({ window: 1, minSide: 1, relativeCost });

export interface DetectOptions {
  /** SRVGGNetCompact without PReLU weights: which parameter-free activation it was trained with. */
  srvggActivation?: 'relu' | 'leakyrelu';
}

export interface BuildOptions {
  /** Wrap 1- and 4-channel models for Crisp's RGB pipeline (graph/graphOps.ts imagePorts). */
  rgbPorts?: boolean;
}

/** One architecture the converter reads from a PyTorch state dict. */
export interface Architecture<S extends ArchSpec = ArchSpec> {
  kind: S['kind'];
  /** The display name (`crisp models list`, the custom-model registry). */
  name: string;
  /**
   * OpenModelDB's `architecture` ids of the models it converts (docs/models.md's coverage, recomputed by
   * test/bench/modelCoverage.ts); empty for one OpenModelDB does not list yet.
   */
  openModelDb: readonly string[];
  /** Other names users know it by, shown after the name in "supported are …". */
  alsoKnownAs?: string[];
  /**
   * The configuration when the state dict is this architecture, from key names and tensor shapes alone;
   * undefined when it is not. Throws UnsupportedArchitectureError when it is, but cannot be converted.
   */
  detect(dict: StateDict, opts: DetectOptions): S | undefined;
  /** One line for `crisp models import` and the registry, e.g. "SPAN x4 (48 feat)". */
  describe(spec: S): string;
  tiling(spec: S): ArchTiling;
  /** The ONNX graph with the dict's weights; the spec goes into its doc string (registry.ts tilingFromDoc). */
  build(spec: S, dict: StateDict, opts: BuildOptions): Uint8Array;
}

export interface ConvWeights {
  weight: Tensor;
  bias: Tensor | null;
}

/** A catalog `unsupported-architecture` failure (engine/contract/errorCatalog.ts); the message says what and why. */
export class UnsupportedArchitectureError extends CrispError {
  override readonly name = 'UnsupportedArchitectureError';
  constructor(message: string) {
    super('unsupported-architecture', message);
  }
}

/** The channel note descriptions end with: '' for RGB, else e.g. ", grey" or ", RGB → RGBA". */
export function channelsNote(spec: ArchSpec): string {
  if (spec.inChannels === 3 && spec.outChannels === 3) return '';
  const name = (c: number) => (c === 1 ? 'grey' : c === 3 ? 'RGB' : c === 4 ? 'RGBA' : `${c} channels`);
  return spec.inChannels === spec.outChannels
    ? `, ${name(spec.inChannels)}`
    : `, ${name(spec.inChannels)} → ${name(spec.outChannels)}`;
}
