/**
 * `crisp presets list | export FILE [NAME…] | import FILE | default NAME | delete NAME`: the presets the desktop
 * app and `--preset` share (app/settings/presetStore.ts). An import file is validated whole before anything is
 * stored; a refused one says why in a sentence.
 */
import type { Command } from 'commander';
import { writeFileAtomic } from '../../../engine/service/index.js';
import { usageError } from '../cliError.js';
import type { PresetStore } from '../../settings/presetStore.js';

/** Runs a call on the preset store, loaded on first use; a refusal (preset-refused) is printed as its own sentence. */
async function withPresets<T>(fn: (store: PresetStore) => Promise<T>): Promise<T> {
  const { openPresetStore } = await import('../../settings/presetStore.js');
  return fn(openPresetStore());
}

export function registerPresets(program: Command): void {
  const presets = program.command('presets').description('List, export, import and choose upscale presets');
  presets
    .command('list')
    .description('List the presets (built-in and your own) and their options')
    .option('--json', 'print them as JSON')
    .action(async (flags: { json?: boolean }) => {
      const [all, def] = await withPresets((s) => Promise.all([s.list(), s.getDefault()]));
      if (flags.json) {
        process.stdout.write(`${JSON.stringify({ default: def.name, presets: all }, null, 2)}\n`);
        return;
      }
      for (const p of all) {
        const o = p.options;
        const marks = [p.builtIn ? 'built-in' : '', p.name === def.name ? 'default' : ''].filter(Boolean).join(', ');
        process.stdout.write(
          `${p.name}${marks ? ` (${marks})` : ''}: ${o.model} ×${o.scale}${o.passes === 2 ? ' twice' : ''}, ${o.format}` +
            ` compression ${o.compression}${o.face ? ', faces' : ''}, metadata ${o.metadata}` +
            `${o.outputFolder ? `, into ${o.outputFolder}` : ''}\n`,
        );
      }
    });
  presets
    .command('export')
    .description('Write presets to a JSON file (your own presets, or the ones named)')
    .argument('<file>', 'the file to write')
    .argument('[name...]', 'presets to export (default: all of your own)')
    .action(async (file: string, names: string[]) => {
      const doc = await withPresets((s) => s.exportPresets(names));
      await writeFileAtomic(file, `${JSON.stringify(doc, null, 2)}\n`);
      process.stdout.write(`Exported ${doc.presets.map((p) => `"${p.name}"`).join(', ')} to ${file}\n`);
    });
  presets
    .command('import')
    .description('Add the presets of a JSON file written by "crisp presets export" or the app')
    .argument('<file>', 'the presets file')
    .action(async (file: string) => {
      const { readFile } = await import('node:fs/promises');
      const text = await readFile(file, 'utf8').catch(() => {
        throw usageError(`cannot read ${file}: check the path`);
      });
      const added = await withPresets((s) => s.importPresets(text));
      process.stdout.write(`Imported ${added.map((p) => `"${p.name}"`).join(', ')}\n`);
    });
  presets
    .command('default')
    .description('Choose the preset "crisp FILE…" uses (and the app starts with)')
    .argument('<name>', 'a preset name')
    .action(async (name: string) => {
      const p = await withPresets((s) => s.setDefault(name));
      process.stdout.write(`Default preset: "${p.name}"\n`);
    });
  presets
    .command('delete')
    .description('Delete one of your presets')
    .argument('<name>', 'a preset name')
    .action(async (name: string) => {
      await withPresets((s) => s.remove(name));
      process.stdout.write(`Deleted "${name}"\n`);
    });
}
