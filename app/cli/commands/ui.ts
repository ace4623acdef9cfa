/**
 * `crisp ui [--port N]`: the desktop UI in a browser on this computer, for machines where Electron
 * cannot run. Binds 127.0.0.1 only; the printed URL carries the access token.
 */
import { InvalidArgumentError, type Command } from 'commander';
import { usageError } from '../cliError.js';
import { addOptionFlags } from '../optionFlags.js';
import { modelDirsOf, UI_OPTIONS } from '../processOptions.js';

function port(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > 65535) throw new InvalidArgumentError('expected a port number 0–65535');
  return n;
}

/** How long stopping may take before the process exits anyway. */
const CLOSE_DEADLINE_MS = 10_000;

interface UiFlags {
  port: number;
  data?: string;
}

export function registerUi(program: Command): void {
  const command = program
    .command('ui')
    .description('Open the Crisp app in a web browser on this computer (127.0.0.1 only, token-protected)')
    .option('--port <port>', 'port to listen on (0: any free port)', port, 0)
    .option('--data <dir>', 'app data folder (settings, queue, API key) (default: ~/.crisp/app)');
  addOptionFlags(command, Object.values(UI_OPTIONS)).action(async (flags: UiFlags & Record<string, unknown>) => {
    // The app layer (engine, HTTP bridge) loads only for this command.
    const [{ DEFAULT_APP_DATA_DIR, startUi }, { readOptionFlags }] = await Promise.all([
      import('../../ui/startUi.js'),
      import('../readOptionFlags.js'),
    ]);
    const modelDirs = modelDirsOf(readOptionFlags(flags, UI_OPTIONS).modelsDir);
    let ui;
    try {
      ui = await startUi({
        port: flags.port,
        dataDir: flags.data ?? DEFAULT_APP_DATA_DIR,
        ...(modelDirs ? { modelDirs } : {}),
      });
    } catch (e) {
      // ui-not-built and every other catalogued refusal is printed as its own sentence.
      if ((e as NodeJS.ErrnoException).code === 'EADDRINUSE')
        throw usageError(`port ${flags.port} is already in use: pick another with --port, or 0 for any`);
      throw e;
    }
    // Tests and scripts read this line to find the address.
    process.stdout.write(`crisp ui: open ${ui.server.url}\n`);
    process.stdout.write('crisp ui: press Ctrl+C to stop\n');
    await new Promise<void>((resolve) => {
      const stop = () => resolve();
      process.once('SIGINT', stop);
      process.once('SIGTERM', stop);
    });
    // A stop always ends the process: a close stuck on a filesystem call that never returns (or a second
    // signal) must not leave a server nobody can stop short of SIGKILL.
    const forced = new Promise<'forced'>((resolve) => {
      const timer = setTimeout(() => resolve('forced'), CLOSE_DEADLINE_MS);
      timer.unref();
      process.once('SIGINT', () => resolve('forced'));
      process.once('SIGTERM', () => resolve('forced'));
    });
    if ((await Promise.race([ui.close().then(() => 'closed' as const), forced])) === 'forced') {
      process.stderr.write('crisp ui: stopped without finishing cleanup (it did not finish in time)\n');
      process.exit(1);
    }
  });
}
