/**
 * Decides which registered architecture a state dict is, from key names and tensor shapes alone, and refuses
 * anything else with a message that says what was found.
 */
import { UnsupportedArchitectureError, type Architecture, type ArchSpec, type DetectOptions } from './architecture.js';
import { GFPGAN_V1_UNSUPPORTED, isOriginalGfpganV1, looksLikeGfpgan } from './gfpgan.js';
import { ARCHITECTURES, supportedNames } from './registry.js';
import { identifyUnsupported } from './unsupported.js';
import type { StateDict } from '../checkpoint/stateDict.js';

export function detectArchitecture(dict: StateDict, opts: DetectOptions = {}): ArchSpec {
  return identifyArchitecture(dict, opts).spec;
}

/** The first registered architecture that claims the dict, with its configuration; else a refusal. */
export function identifyArchitecture(
  dict: StateDict,
  opts: DetectOptions = {},
): { architecture: Architecture; spec: ArchSpec } {
  if (looksLikeGfpgan(dict)) {
    throw new UnsupportedArchitectureError(
      isOriginalGfpganV1(dict)
        ? GFPGAN_V1_UNSUPPORTED
        : 'this is a GFPGAN face restorer, not an upscaler: import it with "crisp models import FILE --face", or convert it with "crisp models convert"',
    );
  }
  // Checkpoints that embed a supported network (MMRealSR's RRDBNet) are named before any module may claim them.
  const shadowing = identifyUnsupported(dict, { early: true });
  if (shadowing) throw new UnsupportedArchitectureError(shadowing);
  for (const architecture of ARCHITECTURES) {
    const spec = architecture.detect(dict, opts);
    if (spec) return { architecture, spec };
  }
  const known = identifyUnsupported(dict);
  if (known) throw new UnsupportedArchitectureError(known);
  throw new UnsupportedArchitectureError(`unsupported architecture: ${summarise(dict)}`);
}

/** A short description of an unrecognised state dict, e.g. for SwinIR/HAT/DAT checkpoints. */
export function summarise(dict: StateDict): string {
  const keys = [...dict.keys()];
  const prefixes = [...new Set(keys.map((k) => k.split('.').slice(0, 2).join('.')))].slice(0, 6);
  const hints: string[] = [];
  if (keys.some((k) => k.includes('attn'))) hints.push('attention layers (a transformer such as SwinIR/HAT/DAT?)');
  if (keys.some((k) => k.includes('stylegan') || k.includes('condition_scale')))
    hints.push('StyleGAN blocks (a face restorer such as GFPGAN?)');
  return `${keys.length} tensors, keys starting ${prefixes.join(', ')}${keys.length > 6 ? ', …' : ''}${hints.length ? `; found ${hints.join('; ')}` : ''}; supported are ${supportedNames()}`;
}
