import type { Command } from 'commander';
import { listModels, modelSearchDirs } from '../../../engine/models/catalog.js';

export function registerModelsList(models: Command): void {
  models
    .command('list')
    .description('Every contract model with its open model, licence, and whether it is installed')
    .option('--json', 'print JSON instead of a table')
    .action((opts: { json?: boolean }) => {
      const dirs = modelSearchDirs();
      const rows = listModels(dirs);
      if (opts.json) {
        process.stdout.write(`${JSON.stringify(rows, null, 2)}\n`);
        return;
      }
      const table = rows.map((m) => [m.name, m.model, m.architecture, m.licence, m.installed ? 'installed' : 'not installed']);
      const header = ['MODEL', 'OPEN MODEL', 'ARCHITECTURE', 'LICENCE', 'STATUS'];
      const widths = header.map((h, i) => Math.max(h.length, ...table.map((r) => (r[i] ?? '').length)));
      const line = (r: string[]) => r.map((c, i) => c.padEnd(widths[i] ?? 0)).join('  ').trimEnd();
      process.stdout.write(`${[line(header), ...table.map(line)].join('\n')}\n`);
      process.stdout.write(`\nModels are looked up in:\n${dirs.map((d) => `  ${d}`).join('\n')}\n`);
    });
}
