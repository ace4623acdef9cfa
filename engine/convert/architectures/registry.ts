/**
 * The architectures the converter reads from PyTorch state dicts, in detection order: the first whose `detect`
 * claims a state dict converts it (detect.ts). Adding an architecture is one module exporting one `Architecture`
 * (architecture.ts) and its line here; nothing else names architectures.
 */
import type { Architecture, ArchSpec, ArchTiling } from './architecture.js';
import { atd } from './atd.js';
import { craft } from './craft.js';
import { dat } from './dat.js';
import { dctlsa } from './dctlsa.js';
import { ditn } from './ditn.js';
import { drct } from './drct.js';
import { esrganPlus } from './esrganPlus.js';
import { fdat } from './fdat.js';
import { hat } from './hat.js';
import { mosr } from './mosr.js';
import { omnisr } from './omnisr.js';
import { rcan } from './rcan.js';
import { realcugan } from './realcugan.js';
import { realplksr } from './realplksr.js';
import { rgt } from './rgt.js';
import { rrdb } from './rrdb.js';
import { span } from './span.js';
import { srformer } from './srformer.js';
import { srvgg } from './srvgg.js';
import { swiftSrgan } from './swiftSrgan.js';
import { swinir } from './swinir.js';

export const ARCHITECTURES: readonly Architecture[] = [
  rrdb,
  srvgg,
  span,
  realplksr,
  omnisr,
  swinir,
  hat,
  dat,
  srformer,
  rcan,
  esrganPlus,
  realcugan,
  mosr,
  fdat,
  rgt,
  swiftSrgan,
  drct,
  atd,
  ditn,
  dctlsa,
  craft,
];

/** The registered architecture of a spec's kind (undefined for a kind no module claims). */
export function architectureOf(spec: Pick<ArchSpec, 'kind'>): Architecture | undefined {
  return ARCHITECTURES.find((a) => a.kind === spec.kind);
}

function registered(spec: ArchSpec): Architecture {
  const arch = architectureOf(spec);
  if (!arch) throw new Error(`no architecture of kind ${spec.kind} is registered`);
  return arch;
}

/** "RRDBNet (ESRGAN/BasicSR), SRVGGNetCompact, … and SRFormer". */
export function supportedNames(): string {
  const names = ARCHITECTURES.map((a) => (a.alsoKnownAs ? `${a.name} (${a.alsoKnownAs.join('/')})` : a.name));
  return `${names.slice(0, -1).join(', ')} and ${names[names.length - 1]}`;
}

export const describeSpec = (spec: ArchSpec): string => registered(spec).describe(spec);

export const tilingOf = (spec: ArchSpec): ArchTiling => registered(spec).tiling(spec);

/**
 * The tiling needs of a converted model, from the spec Crisp writes into its ONNX doc string (null for models
 * converted elsewhere: they get the CNN defaults).
 */
export function tilingFromDoc(doc: string | undefined): ArchTiling | null {
  if (!doc?.startsWith('{')) return null;
  try {
    const spec = JSON.parse(doc) as Partial<ArchSpec>;
    if (typeof spec.kind !== 'string') return null;
    return architectureOf({ kind: spec.kind })?.tiling(spec as ArchSpec) ?? null;
  } catch {
    return null;
  }
}
