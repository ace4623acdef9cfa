/**
 * The coverage docs/models.md states is the one OpenModelDB's data gives (test/bench/modelCoverage.ts), and the
 * registry's OpenModelDB ids are each claimed once.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ARCHITECTURES } from '../../engine/convert/architectures/registry.js';
import { coverage, percent, readSnapshot } from '../bench/modelCoverage.js';
import { REPO_ROOT } from '../helpers/paths.js';

describe('coverage of OpenModelDB', () => {
  const c = coverage(readSnapshot());

  it('docs/models.md states the counts the data gives', () => {
    const docs = readFileSync(path.join(REPO_ROOT, 'docs', 'models.md'), 'utf8').replace(/\s+/g, ' ');
    expect(c.total).toBe(671);
    expect(docs).toContain(
      `**Crisp converts ${c.covered} of ${c.total} models (${percent(c.covered, c.total)}); of the ${c.recentTotal} ` +
        `uploaded since 2024, ${c.recentCovered} (${percent(c.recentCovered, c.recentTotal)}).**`,
    );
  });

  it('each OpenModelDB id is converted by at most one architecture, and only ids the data knows', () => {
    const ids = ARCHITECTURES.flatMap((a) => a.openModelDb);
    expect(new Set(ids).size).toBe(ids.length);
    const known = new Set(c.byArchitecture.map((a) => a.id));
    expect(ids.filter((id) => !known.has(id))).toEqual([]);
  });
});
