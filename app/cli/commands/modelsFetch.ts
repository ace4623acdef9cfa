/**
 * `crisp models fetch [NAME…|--all]`: download, convert and install catalog models into the user's
 * models directory. One line per model on stdout (installed or why not); exit code 1 if any failed.
 */
import { Command } from 'commander';
import { loadFaceFetch, loadModelFetch } from '../../../engine/convert/index.js';
import { FACE_MODELS, loadModelCatalog, userModelsDir, type CatalogEntry } from '../../../engine/core/index.js';
import { usageError } from '../cliError.js';
import { int8AfterInstall } from '../int8Step.js';

interface FetchCommandOptions {
  all?: boolean;
  dir?: string;
  connectTimeout?: string;
  int8?: boolean;
}

function pickEntries(catalog: CatalogEntry[], names: string[], all: boolean): CatalogEntry[] {
  if (all) return catalog;
  if (names.length === 0) throw usageError('name at least one model, or pass --all (see "crisp models list")');
  return names.map((n) => {
    // Accept the contract name or the open model's own name (e.g. realesr-general-x4v3).
    const e = catalog.find((c) => c.name === n || c.model === n);
    if (!e) throw usageError(`unknown model '${n}' (see "crisp models list")`);
    return e;
  });
}

function mb(n: number): string {
  return (n / 1048576).toFixed(1);
}

export function registerModelsFetch(models: Command): void {
  models
    .command('fetch')
    .description('Download, convert and install models into your models directory')
    .argument('[names...]', 'model names (contract or open-model names; gfpgan-1.4 or gfpgan-1.3 for face enhancement)')
    .option('--all', 'fetch every catalog model')
    .option('--dir <dir>', 'models directory (default: your user models directory)')
    .option('--connect-timeout <ms>', 'give up on a server that does not answer within this many ms', '5000')
    .option(
      '--int8',
      'also make each model\'s int8 variant for faster CPU upscaling (minutes per model; see "crisp models quantize")',
    )
    .action(async (names: string[], opts: FetchCommandOptions) => {
      // Loaded here so `crisp --help` never pays for the catalog, the progress bar or the downloader.
      const [{ loadCatalog }, { default: cliProgress }] = await Promise.all([
        loadModelCatalog(),
        import('cli-progress'),
      ]);
      // Face restorers (gfpgan-1.4, gfpgan-1.3) are fetched by their own path: converted and installed under face/.
      const faceEntries = FACE_MODELS.filter((f) => names.includes(f.name));
      const srNames = names.filter((n) => !faceEntries.some((f) => f.name === n));
      const entries =
        srNames.length > 0 || opts.all || faceEntries.length === 0
          ? pickEntries(loadCatalog(), srNames, Boolean(opts.all))
          : [];
      const modelsDir = opts.dir ?? userModelsDir();
      const connectTimeoutMs = Number(opts.connectTimeout ?? 5000);
      if (!Number.isFinite(connectTimeoutMs) || connectTimeoutMs <= 0)
        throw usageError('--connect-timeout must be a positive number of ms');
      const tty = Boolean(process.stderr.isTTY);
      const bar = tty
        ? new cliProgress.SingleBar(
            {
              stream: process.stderr,
              format: ' {bar} {percentage}% | {name} {mb}/{totalMb} MB',
              hideCursor: true,
              clearOnComplete: true,
            },
            cliProgress.Presets.shades_classic,
          )
        : null;
      let current = '';
      const { fetchModels } = await loadModelFetch();
      const results = await fetchModels(entries, {
        modelsDir,
        connectTimeoutMs,
        onModelProgress: (name, received, total) => {
          if (!bar) return;
          if (name !== current) {
            if (current) bar.stop();
            current = name;
            bar.start(total ?? 0, 0, { name, mb: '0.0', totalMb: total ? mb(total) : '?' });
          }
          if (total) bar.setTotal(total);
          bar.update(total ? received : 0, { name, mb: mb(received), totalMb: total ? mb(total) : '?' });
        },
      });
      if (current) bar?.stop();
      let failed = results.filter((r) => !r.ok).length;
      if (faceEntries.length > 0) {
        const { fetchFaceModel } = await loadFaceFetch();
        for (const f of faceEntries) {
          process.stderr.write(
            `${f.name}: downloading ${f.title} (${mb(f.download.size)} MB) from ${new URL(f.download.url).host}, then converting it to ONNX…\n`,
          );
          try {
            const installed = await fetchFaceModel(f, {
              modelsDir,
              connectTimeoutMs,
              onProgress: (received, total) => {
                if (!bar) return;
                if (current !== f.name) {
                  if (current) bar.stop();
                  current = f.name;
                  bar.start(total ?? f.download.size, 0, {
                    name: f.name,
                    mb: '0.0',
                    totalMb: mb(total ?? f.download.size),
                  });
                }
                bar.update(received, { name: f.name, mb: mb(received), totalMb: mb(total ?? f.download.size) });
              },
            });
            if (current) bar?.stop();
            current = '';
            process.stdout.write(
              `${f.name}: installed face model ${installed.path} (use it with --face, or --face-model ${f.name})\n`,
            );
          } catch (e) {
            if (current) bar?.stop();
            current = '';
            failed++;
            process.stdout.write(`${f.name}: ${((e as Error).message ?? String(e)).split('\n')[0]}\n`);
          }
        }
      }
      for (const r of results) {
        process.stdout.write(
          r.ok ? `${r.name}: installed ${r.installed.path} (x${r.installed.scale})\n` : `${r.name}: ${r.error}\n`,
        );
        if (r.ok && opts.int8 && !(await int8AfterInstall(r.name, r.installed.path))) failed++;
      }
      if (failed > 0) process.exitCode = 1;
    });
}

/** Registers `fetch` under the program's `models` command (created if the lead has not yet). */
export function register(program: Command): void {
  const models =
    program.commands.find((c) => c.name() === 'models') ??
    program.command('models').description('List, download and import upscaling models');
  registerModelsFetch(models);
}
