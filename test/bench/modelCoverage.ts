/**
 * Which of OpenModelDB's models Crisp converts, counted from OpenModelDB's own data: each registered
 * architecture names the OpenModelDB `architecture` ids it covers (Architecture.openModelDb), and
 * test/fixtures/openmodeldb/models-<date>.csv is the id, architecture, date and scale of every model in a snapshot
 * of OpenModelDB's `data/models/*.json` (made by `--snapshot DIR` from a checkout of
 * github.com/OpenModelDB/open-model-database).
 *
 *   node --import tsx test/bench/modelCoverage.ts              the table (docs/models.md quotes it)
 *   node --import tsx test/bench/modelCoverage.ts --snapshot DIR   a new CSV from a checkout's data/models
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ARCHITECTURES } from '../../engine/convert/architectures/registry.js';

export const SNAPSHOT = fileURLToPath(new URL('../fixtures/openmodeldb/models-2026-08-14.csv', import.meta.url));
/** Models uploaded since this date are "what people download now" (issue 39). */
export const RECENT_FROM = '2024-01-01';

export interface ModelRow {
  id: string;
  architecture: string;
  date: string;
}

export function readSnapshot(file = SNAPSHOT): ModelRow[] {
  const [header, ...lines] = readFileSync(file, 'utf8').trim().split('\n');
  if (header !== 'id,architecture,date,scale') throw new Error(`${file}: unexpected header ${header}`);
  return lines.map((l) => {
    const [id, architecture, date] = l.split(',');
    return { id: id!, architecture: architecture!, date: date! };
  });
}

export interface Coverage {
  total: number;
  covered: number;
  recentTotal: number;
  recentCovered: number;
  /** OpenModelDB architecture id → models, with the registry's name that converts it (null: none). */
  byArchitecture: { id: string; models: number; recent: number; convertedBy: string | null }[];
}

export function coverage(rows: readonly ModelRow[]): Coverage {
  const owner = new Map<string, string>();
  for (const a of ARCHITECTURES) for (const id of a.openModelDb) owner.set(id, a.name);
  const ids = new Map<string, { models: number; recent: number }>();
  for (const r of rows) {
    const e = ids.get(r.architecture) ?? { models: 0, recent: 0 };
    e.models++;
    if (r.date >= RECENT_FROM) e.recent++;
    ids.set(r.architecture, e);
  }
  const byArchitecture = [...ids]
    .map(([id, e]) => ({ id, ...e, convertedBy: owner.get(id) ?? null }))
    .sort((a, b) => b.models - a.models || a.id.localeCompare(b.id));
  const sum = (f: (x: (typeof byArchitecture)[number]) => number, onlyCovered: boolean) =>
    byArchitecture.filter((x) => !onlyCovered || x.convertedBy).reduce((n, x) => n + f(x), 0);
  return {
    total: sum((x) => x.models, false),
    covered: sum((x) => x.models, true),
    recentTotal: sum((x) => x.recent, false),
    recentCovered: sum((x) => x.recent, true),
    byArchitecture,
  };
}

export const percent = (n: number, of: number) => `${((100 * n) / of).toFixed(1)} %`;

function snapshotFrom(dir: string): string {
  const models = path.join(dir, 'data', 'models');
  const lines = readdirSync(models)
    .filter((f) => f.endsWith('.json'))
    .sort()
    .map((f) => {
      const d = JSON.parse(readFileSync(path.join(models, f), 'utf8')) as Record<string, unknown>;
      return [f.slice(0, -5), d.architecture ?? '', d.date ?? '', d.scale ?? ''].join(',');
    });
  return ['id,architecture,date,scale', ...lines].join('\n') + '\n';
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  const at = process.argv.indexOf('--snapshot');
  if (at > 0) {
    const out = process.argv[at + 2] ?? SNAPSHOT;
    writeFileSync(out, snapshotFrom(process.argv[at + 1]!));
    console.log(`wrote ${out}`);
  } else {
    const c = coverage(readSnapshot());
    console.log(`Crisp converts ${c.covered} of ${c.total} OpenModelDB models (${percent(c.covered, c.total)}); `);
    console.log(
      `of the ${c.recentTotal} uploaded since ${RECENT_FROM}, ${c.recentCovered} (${percent(c.recentCovered, c.recentTotal)}).\n`,
    );
    console.log('| OpenModelDB architecture | models | since 2024 | converted by |');
    console.log('|---|---|---|---|');
    for (const a of c.byArchitecture) console.log(`| ${a.id} | ${a.models} | ${a.recent} | ${a.convertedBy ?? '–'} |`);
  }
}
