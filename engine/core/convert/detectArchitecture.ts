/**
 * Decides which supported architecture a state dict is, from key names and tensor shapes alone,
 * and refuses anything else with a message that says what was found.
 */
import { UnsupportedArchitectureError, type ArchSpec, type SrvggActivation } from './architecture.js';
import { detectDat, looksLikeDat } from './dat.js';
import { GFPGAN_V1_UNSUPPORTED, isOriginalGfpganV1, looksLikeGfpgan } from './gfpgan.js';
import { detectRrdb, looksLikeBasicsrRrdb, looksLikeEsrganOld } from './rrdb.js';
import { detectHat, looksLikeHat } from './hat.js';
import { detectOmniSr, looksLikeOmniSr } from './omnisr.js';
import { detectRealPlksr, looksLikeRealPlksr } from './realplksr.js';
import { detectSpan, looksLikeSpan } from './span.js';
import { detectSrformer, looksLikeSrformer } from './srformer.js';
import { detectSrvgg, looksLikeSrvgg } from './srvgg.js';
import { detectSwinir, looksLikeSwinir } from './swinir.js';
import { identifyUnsupported } from './unsupportedArchitectures.js';
import type { StateDict } from './stateDict.js';

export interface DetectOptions {
  /** SRVGGNetCompact without PReLU weights: which parameter-free activation it was trained with. */
  srvggActivation?: Exclude<SrvggActivation, 'prelu'>;
}

export function detectArchitecture(dict: StateDict, opts: DetectOptions = {}): ArchSpec {
  if (looksLikeGfpgan(dict)) {
    throw new UnsupportedArchitectureError(
      isOriginalGfpganV1(dict)
        ? GFPGAN_V1_UNSUPPORTED
        : 'this is a GFPGAN face restorer, not an upscaler: import it with "crisp models import FILE --face", or convert it with "crisp models convert"',
    );
  }
  const shadowing = identifyUnsupported(dict, { early: true });
  if (shadowing) throw new UnsupportedArchitectureError(shadowing);
  if (looksLikeEsrganOld(dict) || looksLikeBasicsrRrdb(dict)) return detectRrdb(dict).spec;
  if (looksLikeSrvgg(dict)) return detectSrvgg(dict, opts.srvggActivation).spec;
  if (looksLikeSpan(dict)) return detectSpan(dict);
  if (looksLikeRealPlksr(dict)) return detectRealPlksr(dict);
  if (looksLikeOmniSr(dict)) return detectOmniSr(dict);
  // SRFormer's keys also satisfy looksLikeSwinir (same residual-group layout), so it is tested first.
  if (looksLikeDat(dict)) return detectDat(dict);
  if (looksLikeSrformer(dict)) return detectSrformer(dict);
  if (looksLikeHat(dict)) return detectHat(dict);
  if (looksLikeSwinir(dict)) return detectSwinir(dict);
  const known = identifyUnsupported(dict);
  if (known) throw new UnsupportedArchitectureError(known);
  throw new UnsupportedArchitectureError(`unsupported architecture: ${summarise(dict)}`);
}

export const SUPPORTED_NAMES =
  'RRDBNet (ESRGAN/BasicSR), SRVGGNetCompact, SPAN, RealPLKSR, OmniSR, SwinIR, HAT, DAT and SRFormer';

/** A short description of an unrecognised state dict, e.g. for SwinIR/HAT/DAT checkpoints. */
export function summarise(dict: StateDict): string {
  const keys = [...dict.keys()];
  const prefixes = [...new Set(keys.map((k) => k.split('.').slice(0, 2).join('.')))].slice(0, 6);
  const hints: string[] = [];
  if (keys.some((k) => k.includes('attn'))) hints.push('attention layers (a transformer such as SwinIR/HAT/DAT?)');
  if (keys.some((k) => k.includes('stylegan') || k.includes('condition_scale')))
    hints.push('StyleGAN blocks (a face restorer such as GFPGAN?)');
  return `${keys.length} tensors, keys starting ${prefixes.join(', ')}${keys.length > 6 ? ', …' : ''}${hints.length ? `; found ${hints.join('; ')}` : ''}; supported are ${SUPPORTED_NAMES}`;
}
