/**
 * `crisp upscale <file...>`: each image with the options declared in app/settings/upscaleOptions.ts, on
 * this computer or with --remote through a service. The run itself is app/cli/runJobs.ts (shared with
 * `crisp batch`), loaded only when the command runs so `crisp --help` stays fast.
 */
import type { Command } from 'commander';
import { addUpscaleFlags } from '../optionFlags.js';
import { JOBS_HELP } from './jobsHelp.js';

export function registerUpscale(program: Command): void {
  addUpscaleFlags(
    program
      .command('upscale')
      .description('Upscale image files on this computer, or through a service with --remote')
      .argument('<file...>', 'JPG, PNG or WEBP files (for a folder, use crisp batch)'),
  )
    .addHelpText('after', JOBS_HELP)
    .action(async (inputs: string[], opts: Record<string, unknown>) => {
      const { runJobs } = await import('../runJobs.js');
      process.exitCode = await runJobs(inputs, opts, { command: 'upscale', recursive: false });
    });
}
