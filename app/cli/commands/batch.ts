/**
 * `crisp batch <folder...>`: every supported image in the folders (optionally recursive) through the job
 * queue, locally (engine in a worker process) or with --remote through a service. One item's failure
 * never stops the batch; the exit code is 1 when any item failed. Ctrl-C cancels and leaves no partial
 * output.
 */
import { mkdtemp, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import cliProgress from 'cli-progress';
import type { Command } from 'commander';
import { isContractError, parseTaskSettings } from '../../../engine/contract/index.js';
import { defaultModel, modelSearchDirs } from '../../../engine/models/catalog.js';
import type { UpscaleBackend } from '../../backends/backend.js';
import { createLocalBackend } from '../../backends/local/localBackend.js';
import { describeEstimate, estimateCredits } from '../../credits/estimate.js';
import { JobQueue } from '../../jobs/jobQueue.js';
import { DEFAULT_TEMPLATE, templateProblem } from '../../jobs/outputNames.js';
import { createRemoteBackend } from '../../remote/remoteBackend.js';
import { resolveCliApiKey } from '../../secrets/apiKeySource.js';
import type { JobItem, OverwritePolicy, QueueSnapshot } from '../../service/crispService.js';
import { CliError } from '../cliError.js';
import { addEngineOptions, parseEngineFlags, parseFaceFlags, type EngineFlags } from '../engineOptions.js';

interface BatchOptions extends EngineFlags {
  recursive?: boolean;
  template: string;
  overwrite: string;
  out?: string;
  model?: string;
  scale: string;
  format: string;
  compression: string;
  json?: boolean;
}

const OVERWRITE: readonly OverwritePolicy[] = ['skip', 'replace', 'keep'];

export function registerBatch(program: Command): void {
  addEngineOptions(program
    .command('batch')
    .description('Upscale every JPG, PNG and WEBP image in folders, locally or through a service')
    .argument('<folder...>', 'folders (or single images)')
    .option('-r, --recursive', 'include sub-folders')
    .option('-t, --template <template>', 'output file name: {name} {model} {scale} {ext}', DEFAULT_TEMPLATE)
    .option('--overwrite <policy>', 'when the output exists: skip | replace | keep (keep both)', 'keep')
    .option('-o, --out <dir>', 'output folder (default: beside each input)')
    .option('-m, --model <name>', 'model name (see "crisp models list")')
    .option('-s, --scale <1-8>', 'output scale', '4')
    .option('-f, --format <jpg|png|webp>', 'output format', 'png')
    .option('-c, --compression <0-100>', '0 = best quality', '0')
    .option('--json', 'print the final queue as JSON'))
    .action(async (folders: string[], opts: BatchOptions) => {
      process.exitCode = await runBatch(folders, opts);
    });
}

async function runBatch(folders: string[], opts: BatchOptions): Promise<number> {
  const overwrite = OVERWRITE.find((o) => o === opts.overwrite);
  if (!overwrite) throw new CliError(`--overwrite must be one of ${OVERWRITE.join(', ')}`);
  const problem = templateProblem(opts.template);
  if (problem) throw new CliError(`--template: ${problem}`);
  const { executionProvider: ep, tileSize, threads, precision } = parseEngineFlags(opts);
  const dirs = modelSearchDirs();
  const face = parseFaceFlags(opts, dirs);
  let settings;
  try {
    settings = parseTaskSettings({
      model: opts.model ?? defaultModel(dirs),
      scale: opts.scale,
      saveImageAs: opts.format,
      compression: opts.compression,
      enhanceFace: face.enhance,
    });
  } catch (e) {
    throw new CliError(isContractError(e) ? e.message.replace(/^Bad Request: /, '') : String(e));
  }
  if (opts.out) {
    const st = await stat(opts.out).catch(() => undefined);
    if (st && !st.isDirectory()) throw new CliError(`--out ${opts.out} is not a folder`);
  }

  let backend: UpscaleBackend;
  let engineDir: string | undefined;
  if (opts.remote) {
    const apiKey = await resolveCliApiKey(opts.apiKeyFile).catch((e: Error) => {
      throw new CliError(e.message);
    });
    backend = createRemoteBackend({ baseUrl: opts.remote, apiKey });
  } else {
    engineDir = await mkdtemp(path.join(os.tmpdir(), 'crisp-batch-'));
    backend = createLocalBackend({ dataDir: engineDir, modelDirs: dirs, executionProvider: ep, precision, ...(threads ? { threads } : {}), ...(tileSize ? { tileSize } : {}), ...(face.local ? { faces: face.local } : {}) });
  }

  const tty = Boolean(process.stderr.isTTY) && !opts.json;
  const bar = tty
    ? new cliProgress.SingleBar(
        { stream: process.stderr, format: ' {bar} {percentage}% | {finished} of {total} | {label}', hideCursor: true, clearOnComplete: true },
        cliProgress.Presets.shades_classic,
      )
    : undefined;
  const reported = new Set<string>();
  const report = (item: JobItem) => {
    if (opts.json || reported.has(item.id)) return;
    const line =
      item.status === 'done'
        ? `${item.inputPath} → ${item.outputPath} (${item.outputDimensions?.width}×${item.outputDimensions?.height}${item.creditsDeducted !== undefined ? `, ${item.creditsDeducted} credits` : ''})`
        : item.status === 'skipped'
          ? `${item.inputPath}: skipped, ${item.outputPath} exists`
          : item.status === 'failed'
            ? `${item.inputPath}: ${item.error}`
            : undefined;
    if (!line) return;
    reported.add(item.id);
    if (item.status === 'failed') process.stderr.write(`crisp: error: ${line}\n`);
    // The bar lives on stderr; results go to stdout, so piping stdout gets clean lines.
    else process.stdout.write(`${line}\n`);
  };

  const queue = await JobQueue.open({
    backend: () => backend,
    settings: () => ({
      model: settings.model,
      scale: settings.scale,
      format: settings.saveImageAs,
      compression: settings.compression,
      face: settings.enhanceFace,
      outputFolder: opts.out ? path.resolve(opts.out) : '',
      template: opts.template,
      overwrite,
    }),
    onEvent: (e) => {
      if (e.type === 'item') report(e.item);
      if (e.type === 'queue' && bar) {
        const running = e.queue.items.find((i) => i.status === 'running');
        bar.update(e.queue.percent, { finished: e.queue.finished, total: e.queue.total, label: running?.inputName ?? '' });
      }
    },
  });

  const onSigint = () => void queue.cancel();
  process.once('SIGINT', onSigint);
  let final: QueueSnapshot;
  try {
    const added = await queue.addPaths(folders, { recursive: opts.recursive ?? false });
    for (const i of added) report(i); // named files that are not images
    const runnable = added.filter((i) => i.status === 'queued').length;
    if (runnable === 0) throw new CliError(`no JPG, PNG or WEBP images in ${folders.join(', ')}${opts.recursive ? '' : ' (add --recursive for sub-folders)'}`);
    const estimate = estimateCredits(backend.mode, settings, runnable);
    if (!opts.json) process.stderr.write(`crisp: ${describeEstimate(estimate)}\n`);
    if (backend.mode === 'cloud' && !opts.json) {
      const account = await backend.getAccount().catch(() => undefined);
      if (account?.available && account.currentCredits !== undefined) {
        process.stderr.write(`crisp: balance: ${account.currentCredits} credits${account.currentExtraCredits ? ` + ${account.currentExtraCredits} extra` : ''}\n`);
      }
    }
    bar?.start(100, 0, { finished: 0, total: runnable, label: '' });
    await queue.start();
    await queue.idle();
    final = queue.snapshot();
  } finally {
    bar?.stop();
    process.off('SIGINT', onSigint);
    await backend.close();
    if (engineDir) await rm(engineDir, { recursive: true, force: true });
  }

  const count = (s: JobItem['status']) => final.items.filter((i) => i.status === s).length;
  const credits = final.items.reduce((a, i) => a + (i.creditsDeducted ?? 0), 0);
  if (opts.json) {
    process.stdout.write(`${JSON.stringify({ ...final, creditsDeducted: credits }, null, 2)}\n`);
  } else {
    const parts = [`${count('done')} upscaled`, `${count('failed')} failed`];
    if (count('skipped')) parts.push(`${count('skipped')} skipped`);
    if (count('cancelled')) parts.push(`${count('cancelled')} cancelled`);
    if (backend.mode === 'cloud') parts.push(`${credits} credit${credits === 1 ? '' : 's'} deducted`);
    process.stderr.write(`crisp: ${parts.join(', ')} (of ${final.total}).\n`);
  }
  if (count('cancelled') > 0) return 130;
  return count('failed') > 0 ? 1 : 0;
}
