/**
 * `crisp watch DIR [--recursive] [--preset NAME] [--out DIR] [--width N] [--height N] [--long-side N]`: upscales every image that arrives in DIR (or is
 * replaced there) once, with a preset, until Ctrl-C. The run is app/cli/runWatch.ts, loaded only when it runs.
 */
import type { Command } from 'commander';

export function registerWatch(program: Command): void {
  program
    .command('watch')
    .description('Upscale every image that arrives in a folder, once, with a preset (until Ctrl-C)')
    .argument('<dir>', 'the folder to watch')
    .option('-r, --recursive', 'watch sub-folders too (mirrored in the outputs folder)')
    .option('--preset <name>', 'the preset to upscale with (default: the default preset, "crisp presets list")')
    .option('-o, --out <dir>', "outputs folder, never watched itself (default: the preset's, else DIR/upscaled)")
    .option('--poll <ms>', 'how often to look at the folder, in milliseconds', '1000')
    .option(
      '--width <pixels>',
      "exact output width, aspect kept (with --height: fit inside the box); replaces the preset's size",
    )
    .option(
      '--height <pixels>',
      "exact output height, aspect kept (with --width: fit inside the box); replaces the preset's size",
    )
    .option('--long-side <pixels>', "exact length of the longer side, aspect kept; replaces the preset's size")
    .action(async (dir: string, flags: Record<string, unknown>) => {
      const { runWatch } = await import('../runWatch.js');
      process.exitCode = await runWatch(dir, flags);
    });
}
