/**
 * `crisp` command line. Each command lives in commands/<name>.ts and registers itself here. Errors end
 * as one line on stderr and a non-zero exit code — never a stack trace (set CRISP_DEBUG=1 to see one).
 */
import { Command, CommanderError } from 'commander';
import { registerBatch } from './commands/batch.js';
import { registerModelsFetch } from './commands/modelsFetch.js';
import { registerModelsImport } from './commands/modelsImport.js';
import { registerModelsList } from './commands/modelsList.js';
import { registerModelsQuantize } from './commands/modelsQuantize.js';
import { register as registerServe } from './commands/serve.js';
import { registerUi } from './commands/ui.js';
import { registerUpscale } from './commands/upscale.js';
import { register as registerUsers } from './commands/users.js';
import { CliError } from './cliError.js';

export function buildProgram(): Command {
  const program = new Command('crisp')
    .description('Crisp: AI image upscaling on this machine or through an upscaling service')
    .version('0.1.0')
    .showHelpAfterError('(run "crisp --help" for usage)')
    // Usage errors read like every other error of ours: "crisp: error: …" (set before the subcommands,
    // which inherit it).
    .configureOutput({ outputError: (text, write) => write(`crisp: ${text}`) })
    .exitOverride();
  registerUpscale(program);
  registerBatch(program);
  registerServe(program);
  registerUi(program);
  registerUsers(program);
  const models = program.command('models').description('List, download and import upscaling models');
  registerModelsList(models);
  registerModelsFetch(models);
  registerModelsImport(models);
  registerModelsQuantize(models);
  return program;
}

async function main(argv: string[]): Promise<number> {
  const program = buildProgram();
  try {
    await program.parseAsync(argv);
    return typeof process.exitCode === 'number' ? process.exitCode : 0;
  } catch (e) {
    if (e instanceof CommanderError) return e.exitCode;
    if (process.env.CRISP_DEBUG) console.error(e);
    const message = e instanceof CliError ? e.message : e instanceof Error ? e.message.split('\n')[0] : String(e);
    process.stderr.write(`crisp: error: ${message}\n`);
    return e instanceof CliError ? e.exitCode : 1;
  }
}

process.exitCode = await main(process.argv);
