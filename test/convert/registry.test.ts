/**
 * The converter's registry (engine/convert/architectures/registry.ts): every architecture is one module and one
 * line in an ordered list, and the order may only matter where two modules could claim the same checkpoint. This
 * runs every registered `detect` on a checkpoint of each architecture (the PyTorch goldens' files, and
 * generated RRDBNet and SRVGGNetCompact dicts): exactly one module claims it, its own, and the others answer
 * "not mine" without throwing, so today's order decides nothing. A new architecture whose keys overlap an old
 * one's fails here until one of them tells the two apart.
 */
import { readdirSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { ArchSpec } from '../../engine/convert/architectures/architecture.js';
import {
  ARCHITECTURES,
  describeSpec,
  supportedNames,
  tilingFromDoc,
} from '../../engine/convert/architectures/registry.js';
import { readSafetensors } from '../../engine/convert/checkpoint/safetensors.js';
import type { StateDict } from '../../engine/convert/checkpoint/stateDict.js';
import { GOLDEN_DIR, loadGolden } from './support/golden.js';
import { nearIdentity, randomRrdb } from './support/reference.js';

/** Every golden suite is named after its architecture's kind (gfpgan is the face restorer, not registered). */
const SUITES = readdirSync(GOLDEN_DIR).filter((s) => s !== 'gfpgan');

function checkpoints(): Array<[string, string, StateDict]> {
  const out: Array<[string, string, StateDict]> = [];
  for (const suite of SUITES) {
    const cases = readdirSync(`${GOLDEN_DIR}/${suite}`).filter((f) => f.endsWith('.json'));
    for (const c of cases) {
      const file = loadGolden(suite, c.replace(/\.json$/, '')).files.get('model.safetensors')!;
      out.push([suite, `${suite}/${c}`, readSafetensors(file)]);
    }
  }
  for (const layout of ['esrgan', 'basicsr'] as const)
    out.push(['rrdb', `rrdb ${layout}`, randomRrdb({ layout, numBlocks: 2, scale: 4, numFeat: 8, numGrowCh: 4 }).dict]);
  out.push(['srvgg', 'srvgg', nearIdentity()]);
  return out;
}

describe('architecture registry', () => {
  it('has one module per kind, and a checkpoint of every registered kind to check it with', () => {
    const kinds = ARCHITECTURES.map((a) => a.kind);
    expect(new Set(kinds).size).toBe(kinds.length);
    expect([...SUITES, 'rrdb', 'srvgg'].sort()).toEqual([...kinds].sort());
    // "supported are …" names them all in the list's order (unsupportedArchitectures.test.ts pins the sentence).
    const at = ARCHITECTURES.map((a) => supportedNames().indexOf(a.name));
    expect(at.every((i) => i >= 0)).toBe(true);
    expect([...at].sort((x, y) => x - y)).toEqual(at);
  });

  it.each(checkpoints())('%s: exactly one module claims %s', (kind, _name, dict) => {
    const claims: string[] = [];
    let spec: ArchSpec | undefined;
    for (const arch of ARCHITECTURES) {
      const found = arch.detect(dict, {});
      if (found) {
        claims.push(arch.kind);
        spec = found;
      }
    }
    expect(claims).toEqual([kind]);
    // What the registry says about the spec is what the spec's own module says, and survives the doc string.
    expect(describeSpec(spec!)).toBe(ARCHITECTURES.find((a) => a.kind === kind)!.describe(spec!));
    expect(tilingFromDoc(JSON.stringify(spec))).toEqual(ARCHITECTURES.find((a) => a.kind === kind)!.tiling(spec!));
  });
});
