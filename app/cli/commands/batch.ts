/**
 * `crisp batch <folder...>`: every JPG, PNG and WEBP image in the folders (sub-folders with --recursive)
 * with exactly the flags of `crisp upscale` (both are generated from one declaration) and the same run
 * (app/cli/runJobs.ts). One item's failure never stops the batch; Ctrl-C leaves no partial output.
 */
import type { Command } from 'commander';
import { addUpscaleFlags } from '../optionFlags.js';
import { JOBS_HELP } from './jobsHelp.js';

export function registerBatch(program: Command): void {
  addUpscaleFlags(
    program
      .command('batch')
      .description('Upscale every JPG, PNG and WEBP image in folders, on this computer or through a service')
      .argument('<folder...>', 'folders (or single images)')
      .option('-r, --recursive', 'include sub-folders'),
  )
    .addHelpText('after', JOBS_HELP)
    .action(async (folders: string[], opts: Record<string, unknown>) => {
      const { runJobs } = await import('../runJobs.js');
      process.exitCode = await runJobs(folders, opts, { command: 'batch', recursive: Boolean(opts.recursive) });
    });
}
