/**
 * The one task path of the command line: `crisp upscale` and `crisp batch`, locally (the engine in a
 * worker process) or with --remote through a service, all go through the app's JobQueue — the same runner,
 * namer, folder checks and error sentences as the desktop app — and end in one JobReport.
 * Everything is checked before any inference: options, model name, output folder, API key.
 */
import { mkdtemp, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { DENOISE_MODEL, CrispError, ERROR_CATALOG, hasErrorCode, isErrorCode } from '../../engine/contract/index.js';
import {
  loadCustomModels,
  loadModelCatalog,
  modelSearchDirs,
  resolveFaceModel,
  resolveModelName,
  userModelsDir,
  type CustomModelListing,
} from '../../engine/core/index.js';
import type { UpscaleBackend } from '../backends/backend.js';
import { describeEstimate, estimateCreditsFor } from '../credits/estimate.js';
import { jobReport, type JobReport } from '../jobs/jobReport.js';
import { jobSettingsFrom, upscaleSettingsFor } from '../jobs/jobSettings.js';
import { prepareOutputFolder } from '../jobs/outputFolder.js';
import { toUserError } from '../jobs/userErrors.js';
import { usageError } from './cliError.js';
import type { PresetOptions } from '../settings/presets.js';
import type { Mode } from '../settings/settingsSchema.js';
import type { JobItem } from '../service/crispService.js';

import type { RunFlags } from './optionFlags.js';
import { readUpscaleFlags, type ParsedUpscaleFlags } from './readUpscaleFlags.js';
import { createProgressView } from './progressView.js';
import { paint } from './terminal.js';

export interface JobCommand {
  command: 'upscale' | 'batch';
  /** batch: include sub-folders. */
  recursive: boolean;
}

/**
 * The exit status of a run (documented in `crisp help upscale`): 0 when nothing failed; otherwise the catalog
 * row's exit status of an interruption, or the highest of the failed images' rows.
 */
export function runExitCode(report: JobReport, interrupted: boolean): number {
  if (interrupted || report.cancelled > 0) return ERROR_CATALOG.cancelled.exitCode;
  const failed = report.results.flatMap((r) => (r.status === 'failed' && r.error ? [r.error.code] : []));
  if (failed.length === 0) return 0;
  return Math.max(...failed.map((code) => ERROR_CATALOG[isErrorCode(code) ? code : 'internal'].exitCode));
}

function shellQuote(p: string): string {
  return /^[\w./~:-]+$/.test(p) ? p : `'${p.replace(/'/g, `'\\''`)}'`;
}

/** `upscale` takes files; a folder is what `batch` is for, so say so instead of "no such file". */
async function checkUpscaleInputs(inputs: string[]): Promise<void> {
  for (const input of inputs) {
    const st = await stat(input).catch(() => undefined);
    if (st?.isDirectory()) {
      throw usageError(
        `${input} is a folder; crisp upscale takes image files. To upscale every image in it, run: crisp batch ${shellQuote(input)}`,
      );
    }
  }
}

/** The model to run: as given (bare imported names answer too), or the default, with "did you mean". */
async function resolveCliModel(flags: ParsedUpscaleFlags, mode: Mode): Promise<string> {
  if (flags.model === undefined) {
    // --denoise only exists for one model, so it chooses that model rather than failing on the default.
    if (flags.denoise !== undefined) return DENOISE_MODEL;
    const { defaultModel } = await loadModelCatalog();
    return defaultModel(modelSearchDirs());
  }
  // A service offers the contract's models only; imported models run on this computer.
  let custom: CustomModelListing[] = [];
  if (mode === 'local') {
    const { listCustomModels } = await loadCustomModels();
    custom = await listCustomModels(userModelsDir()).catch(() => []);
  }
  const r = resolveModelName(flags.model, { customNames: custom.map((m) => m.name) });
  if (!r.ok) {
    const remoteHint =
      mode === 'cloud' && flags.model.startsWith('custom:')
        ? ' Imported models run on this computer only: drop --remote.'
        : '';
    throw new CrispError('unknown-model', `--model: ${r.message}${remoteHint}`);
  }
  return r.name;
}

function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1048576) return `${(n / 1024).toFixed(1)} KB`;
  return `${(n / 1048576).toFixed(1)} MB`;
}

function itemLine(item: JobItem, mode: Mode): string | undefined {
  if (item.status === 'done') {
    const credits =
      mode === 'cloud' ? `, ${item.creditsDeducted ?? 0} credit${item.creditsDeducted === 1 ? '' : 's'}` : '';
    const size = item.fileSize !== undefined ? `, ${formatBytes(item.fileSize)}` : '';
    return `${item.inputPath} → ${item.outputPath} (${item.outputDimensions?.width}×${item.outputDimensions?.height}${size}${credits})`;
  }
  if (item.status === 'skipped') return `${item.inputPath}: skipped, ${item.outputPath} exists`;
  return undefined;
}

function printJson(report: JobReport): void {
  process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
}

/** The preset named with --preset, or the default one for `crisp FILE…`; none otherwise. */
async function presetFor(run: RunFlags): Promise<PresetOptions | undefined> {
  if (run.preset === undefined && !run.defaultPreset) return undefined;
  const { openPresetStore } = await import('../settings/presetStore.js');
  const store = openPresetStore();
  try {
    return (run.preset !== undefined ? await store.get(run.preset) : await store.getDefault()).options;
  } catch (e) {
    if (hasErrorCode(e, 'preset-refused')) throw usageError(`--preset: ${e.message}`);
    throw e;
  }
}

/** Runs the command; answers the exit code. Errors before the run are thrown (main prints them). */
export async function runJobs(inputs: string[], raw: Record<string, unknown>, cmd: JobCommand): Promise<number> {
  const run = raw as RunFlags;
  try {
    return await runChecked(inputs, raw, run, cmd);
  } catch (e) {
    if (!run.json) throw e;
    // --json: the run's error is part of the one document on stdout, with its stable code.
    const u = toUserError(e);
    printJson(jobReport(null, [], u));
    return u.exitCode;
  }
}

async function runChecked(
  inputs: string[],
  raw: Record<string, unknown>,
  run: RunFlags,
  cmd: JobCommand,
): Promise<number> {
  const flags = readUpscaleFlags(raw, await presetFor(run));
  const mode: Mode = run.remote ? 'cloud' : 'local';
  if (cmd.command === 'upscale') await checkUpscaleInputs(inputs);
  const model = await resolveCliModel(flags, mode);
  if (flags.denoise !== undefined && model !== DENOISE_MODEL) {
    throw new CrispError(
      'usage',
      `--denoise only works with --model ${DENOISE_MODEL} (the general photo model), not ${model}.`,
    );
  }
  if (mode === 'cloud' && flags.passes === 2) {
    // Refused before any upload; why a service does not run two passes: CLOUD_PASSES_REFUSAL in remoteBackend.ts.
    throw new CrispError(
      'usage',
      '--passes 2 (double upscale) runs on this computer only: a service upscales each image once per task. Drop --remote, or send the result through the service again.',
    );
  }
  if (mode === 'cloud' && flags.preModel) {
    throw new CrispError(
      'usage',
      '--pre-model runs on this computer only: a service runs one model per task. Drop --remote, or restore the images first.',
    );
  }
  if (flags.outputFolder) await prepareOutputFolder(flags.outputFolder);
  const settings = jobSettingsFrom(
    { ...flags, model, outputFolder: flags.outputFolder ? path.resolve(flags.outputFolder) : '' },
    mode,
  );

  let backend: UpscaleBackend;
  let engineDir: string | undefined;
  if (run.remote) {
    const { resolveCliApiKey } = await import('../secrets/apiKeySource.js');
    const apiKey = await resolveCliApiKey(run.apiKeyFile).catch((e: Error) => {
      throw usageError(e.message);
    });
    const { createRemoteBackend } = await import('../remote/remoteBackend.js');
    backend = createRemoteBackend({ baseUrl: run.remote, apiKey });
  } else {
    // --face locally needs a face model: refused here, before any work, with the ways to get one. The
    // model and strength then travel with each job (upscaleSettingsFor), not with the engine.
    if (settings.face) resolveFaceModel(flags.faceModel ?? undefined, modelSearchDirs());
    const dataDir = run.data ?? (engineDir = await mkdtemp(path.join(os.tmpdir(), 'crisp-')));
    const { createLocalBackend } = await import('../backends/local/localBackend.js');
    backend = createLocalBackend({
      dataDir,
      modelDirs: modelSearchDirs(),
      customModelsDir: userModelsDir(),
      executionProvider: flags.executionProvider,
      ...(flags.threads ? { threads: flags.threads } : {}),
      ...(flags.tileSize ? { tileSize: flags.tileSize } : {}),
      // --precision is an engine-wide choice (int8 variants are picked per model when sessions load).
      ...(flags.precision ? { precision: flags.precision } : {}),
    });
  }

  const view = run.json ? undefined : createProgressView();
  const reported = new Set<string>();
  const report = (item: JobItem) => {
    if (run.json || reported.has(item.id)) return;
    if (item.status === 'failed') {
      reported.add(item.id);
      view?.clear();
      process.stderr.write(`${paint.error('crisp: error:')} ${item.inputPath}: ${item.error}\n`);
      return;
    }
    const line = itemLine(item, mode);
    if (!line) return;
    reported.add(item.id);
    view?.clear();
    // Results go to stdout, progress and notices to stderr: piping stdout gets clean lines.
    process.stdout.write(`${line}\n`);
    for (const w of item.warnings ?? []) process.stderr.write(`${paint.warning('crisp: warning:')} ${w}\n`);
  };

  const { JobQueue } = await import('../jobs/jobQueue.js');
  const queue = await JobQueue.open({
    backend: () => backend,
    settings: () => settings,
    onEvent: (e) => {
      if (e.type === 'item') report(e.item);
      if (e.type === 'queue') {
        const running = e.queue.items.find((i) => i.status === 'running');
        view?.update(e.queue.percent, e.queue.finished, e.queue.total, running?.inputName ?? '');
      }
    },
  });

  let interrupted = false;
  const onSigint = () => {
    // A second Ctrl-C does not wait for the engine to stop.
    if (interrupted) process.exit(ERROR_CATALOG.cancelled.exitCode);
    interrupted = true;
    void queue.cancel();
  };
  process.on('SIGINT', onSigint);
  process.on('SIGTERM', onSigint);
  let items: JobItem[];
  try {
    const added = await queue.addPaths(inputs, { recursive: cmd.recursive });
    for (const i of added) report(i); // named files that are not images
    const runnable = added.filter((i) => i.status === 'queued').length;
    if (cmd.command === 'batch' && runnable === 0 && added.length === 0) {
      throw new CrispError(
        'not-found',
        `No JPG, PNG or WEBP images in ${inputs.join(', ')}${cmd.recursive ? '' : ' (add --recursive for sub-folders)'}.`,
      );
    }
    if (!run.json && runnable > 0) {
      process.stderr.write(
        `crisp: ${describeEstimate(
          estimateCreditsFor(
            backend.mode,
            upscaleSettingsFor(settings),
            added.filter((i) => i.status === 'queued').map((i) => i.inputDimensions),
          ),
        )}\n`,
      );
      if (backend.mode === 'cloud') {
        const account = await backend.getAccount().catch(() => undefined);
        if (account?.available && account.currentCredits !== undefined) {
          process.stderr.write(
            `crisp: balance: ${account.currentCredits} credits${account.currentExtraCredits ? ` + ${account.currentExtraCredits} extra` : ''}\n`,
          );
        }
      }
    }
    if (runnable > 0) {
      view?.start(runnable);
      await queue.start();
      await queue.idle();
    }
    items = queue.snapshot().items;
  } finally {
    view?.stop();
    process.off('SIGINT', onSigint);
    process.off('SIGTERM', onSigint);
    await backend.close();
    if (engineDir) await rm(engineDir, { recursive: true, force: true });
  }

  const result = jobReport(model, items);
  if (run.json) printJson(result);
  else {
    const parts = [`${result.upscaled} upscaled`, `${result.failed} failed`];
    if (result.skipped) parts.push(`${result.skipped} skipped`);
    if (result.cancelled) parts.push(`${result.cancelled} cancelled`);
    if (backend.mode === 'cloud')
      parts.push(`${result.creditsDeducted} credit${result.creditsDeducted === 1 ? '' : 's'} deducted`);
    process.stderr.write(`crisp: ${parts.join(', ')} (of ${result.results.length}).\n`);
  }
  return runExitCode(result, interrupted);
}
