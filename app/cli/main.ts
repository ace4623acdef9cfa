/**
 * `crisp` command line. Each command lives in commands/<name>.ts and registers itself here; heavy modules
 * (onnxruntime, sharp, fastify, undici, the job runner) are imported by the command that runs, so
 * `crisp --help` and `crisp models list` start in about the time Node does. Errors end as one sentence on
 * stderr and the exit code of its catalog row — a stack trace only with --verbose or CRISP_DEBUG=1.
 */
import { existsSync } from 'node:fs';
import { Command, CommanderError } from 'commander';
import { CRISP_VERSION } from '../../engine/core/index.js';
import { toUserError } from '../jobs/userErrors.js';
import { registerBatch } from './commands/batch.js';
import { registerCompletion } from './commands/completion.js';
import { registerInfo } from './commands/info.js';
import { registerPresets } from './commands/presets.js';
import { registerWatch } from './commands/watch.js';
import { registerModelsConvert } from './commands/modelsConvert.js';
import { registerModelsFetch } from './commands/modelsFetch.js';
import { registerModelsImport } from './commands/modelsImport.js';
import { registerModelsList } from './commands/modelsList.js';
import { registerModelsQuantize } from './commands/modelsQuantize.js';
import { register as registerServe } from './commands/serve.js';
import { registerUi } from './commands/ui.js';
import { registerUpscale } from './commands/upscale.js';
import { register as registerUsers } from './commands/users.js';
import { register as registerWorker } from './commands/worker.js';
import { runInServerIsolate, wantsServerIsolate } from './serverIsolate.js';
import { paint } from './terminal.js';

export function buildProgram(): Command {
  const program = new Command('crisp')
    .description('Crisp: AI image upscaling on this computer or through an upscaling service')
    .version(CRISP_VERSION)
    .option('--verbose', 'show the technical details (stack trace) of an error')
    .showHelpAfterError('(run "crisp --help" for usage)')
    .addHelpText(
      'after',
      '\nWith no command, "crisp FILE..." upscales the files (or the images in folders) with the default preset\n(see "crisp presets list"; flags of "crisp batch" apply, e.g. crisp photo.jpg --preset Illustrations).',
    )
    // Usage errors read like every other error of ours: "crisp: error: …" (set before the subcommands,
    // which inherit it).
    .configureOutput({ outputError: (text, write) => write(`crisp: ${text}`) })
    .exitOverride();
  registerUpscale(program);
  registerBatch(program);
  registerServe(program);
  registerUi(program);
  registerUsers(program);
  registerWorker(program);
  registerPresets(program);
  registerWatch(program);
  registerInfo(program);
  const models = program.command('models').description('List, download and import upscaling models');
  registerModelsList(models);
  registerModelsFetch(models);
  registerModelsImport(models);
  registerModelsQuantize(models);
  registerModelsConvert(models);
  registerCompletion(program);
  return program;
}

function verbose(argv: string[]): boolean {
  return argv.includes('--verbose') || Boolean(process.env.CRISP_DEBUG && process.env.CRISP_DEBUG !== '0');
}

/** The root's own flags: they may come before a command or before `crisp FILE…`'s files. */
const ROOT_FLAGS = new Set(['--verbose']);
const ROOT_ONLY = new Set(['-h', '--help', '-V', '--version']);

/**
 * `crisp FILE…` (no command): the files or folders are upscaled with the default preset, as
 * `crisp batch --default-preset FILE…` (batch takes single images as well as folders).
 */
export function withDefaultCommand(argv: string[], program: Command): string[] {
  let i = 2;
  while (i < argv.length && ROOT_FLAGS.has(argv[i]!)) i++;
  const first = argv[i];
  if (first === undefined || ROOT_ONLY.has(first)) return argv;
  const commands = new Set(program.commands.flatMap((c) => [c.name(), ...c.aliases()]).concat('help'));
  if (commands.has(first)) return argv;
  // A mistyped command ("crisp upscal") stays commander's "unknown command" with its suggestion; a path is
  // something that exists or is spelled like one.
  if (!first.startsWith('-') && !existsSync(first) && !/[\\/.]/.test(first)) return argv;
  return [...argv.slice(0, i), 'batch', '--default-preset', ...argv.slice(i)];
}

async function main(argv: string[]): Promise<number> {
  // `crisp serve` and `crisp worker` run in a worker thread with a server-sized V8 heap (serverIsolate.ts says why).
  if (wantsServerIsolate(argv, new URL(import.meta.url), ROOT_FLAGS))
    return runInServerIsolate(new URL(import.meta.url), argv);
  const program = buildProgram();
  try {
    await program.parseAsync(withDefaultCommand(argv, program));
    return typeof process.exitCode === 'number' ? process.exitCode : 0;
  } catch (e) {
    if (e instanceof CommanderError) return e.exitCode;
    // The sentence and the exit status come from the error's catalog row (engine/contract/errorCatalog.ts).
    const u = toUserError(e);
    process.stderr.write(`${paint.error('crisp: error:')} ${u.message}\n`);
    if (verbose(argv)) console.error(u.cause ?? e);
    return u.exitCode;
  }
}

// `crisp models list | head`: the reader went away; that is not an error worth a stack trace.
process.stdout.on('error', (e: NodeJS.ErrnoException) => {
  if (e.code === 'EPIPE') process.exit(process.exitCode ?? 0);
  throw e;
});

process.exitCode = await main(process.argv);
