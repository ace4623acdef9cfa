/**
 * `crisp upscale <input...>`: runs the engine in-process through the contract (startTask, then
 * getTaskStatus until done), one task per input so one bad file does not sink the others. With
 * `--remote URL` the same contract is spoken over HTTP to a service (app/remote), key from
 * --api-key-file or CRISP_API_KEY.
 */
import { copyFile, mkdtemp, rename, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Command } from 'commander';
import { LOCAL_CALLER } from '../../../engine/api.js';
import { DENOISE_MODEL, isContractError, parseTaskSettings, type TaskStatusData } from '../../../engine/contract/index.js';
import { createEngine, type Engine } from '../../../engine/engine.js';
import { defaultModel, modelSearchDirs, userModelsDir } from '../../../engine/models/catalog.js';
import { customModelNames } from '../../../engine/models/taskModel.js';
import { tempPathFor } from '../../../engine/storage/atomicFile.js';
import { errorMessage } from '../../backends/errors.js';
import { createRemoteBackend } from '../../remote/remoteBackend.js';
import { ApiKeyMissingError, resolveCliApiKey } from '../../secrets/apiKeySource.js';
import { outputFileName } from '../../../engine/tasks/outputNames.js';
import { CliError } from '../cliError.js';
import { addEngineOptions, parseEngineFlags, parseFaceFlags, type EngineFlags } from '../engineOptions.js';
import { createProgressView } from '../progressView.js';

interface UpscaleOptions extends EngineFlags {
  model?: string;
  scale: string;
  format: string;
  compression: string;
  out?: string;
  json?: boolean;
  data?: string;
  denoise?: string;
}

export function registerUpscale(program: Command): void {
  addEngineOptions(program
    .command('upscale')
    .description('Upscale images with a local model, or through a service with --remote')
    .argument('<input...>', 'JPG, PNG or WEBP files')
    .option('-m, --model <name>', 'model name (see "crisp models list"); default: the best installed photo model')
    .option('-s, --scale <1-8>', 'output scale', '4')
    .option('-f, --format <jpg|png|webp>', 'output format', 'png')
    .option('-c, --compression <0-100>', '0 = best quality; jpg/webp quality is 100 − compression', '0')
    .option('--denoise <0-1>', `denoise strength for ${DENOISE_MODEL} (1 = none, 0 = strongest); implies --model ${DENOISE_MODEL}`)
    .option('-o, --out <dir>', 'output folder (default: beside each input)')
    .option('--json', 'print the final status object(s) as JSON')
    .option('--data <dir>', 'keep the engine data (tasks, outputs) in this folder'))
    .action(async (inputs: string[], opts: UpscaleOptions) => {
      process.exitCode = await runUpscale(inputs, opts);
    });
}

async function runUpscale(inputs: string[], opts: UpscaleOptions): Promise<number> {
  const { executionProvider: ep, tileSize, threads, precision } = parseEngineFlags(opts);
  const dirs = modelSearchDirs();
  // Custom models live where "crisp models import" puts them by default; a remote service offers none.
  const customDir = userModelsDir();
  const custom = opts.remote ? new Set<string>() : await customModelNames(customDir);
  const face = parseFaceFlags(opts, dirs);
  const fields = {
    // --denoise only exists for one model, so it chooses that model rather than failing on the default.
    model: opts.model ?? (opts.denoise !== undefined ? DENOISE_MODEL : defaultModel(dirs)),
    scale: opts.scale,
    saveImageAs: opts.format,
    compression: opts.compression,
    enhanceFace: face.enhance,
    ...(opts.denoise !== undefined ? { denoise: opts.denoise } : {}),
  };
  try {
    parseTaskSettings(fields, opts.remote ? {} : { extraModels: (name) => custom.has(name) });
  } catch (e) {
    throw new CliError(isContractError(e) ? e.message.replace(/^Bad Request: /, '') : String(e));
  }
  if (opts.out) {
    const st = await stat(opts.out).catch(() => undefined);
    if (st && !st.isDirectory()) throw new CliError(`--out ${opts.out} is not a folder`);
  }
  if (opts.remote) return runRemoteUpscale(inputs, fields, opts);

  const dataDir = opts.data ?? (await mkdtemp(path.join(os.tmpdir(), 'crisp-')));
  const engine = await createEngine({
    dataDir,
    executionProvider: ep,
    threads,
    tileSize,
    precision,
    modelDirs: dirs,
    customModelsDir: customDir,
    sweepIntervalMs: 0,
    ...(face.local ? { faces: face.local } : {}),
  });
  const stop = () => void engine.close();
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  try {
    return await upscaleAll(engine, inputs, fields, opts);
  } finally {
    process.off('SIGINT', stop);
    process.off('SIGTERM', stop);
    await engine.close();
    if (!opts.data) await rm(dataDir, { recursive: true, force: true });
  }
}

interface Job {
  input: string;
  taskId?: string;
  status?: TaskStatusData;
  error?: string;
}

async function upscaleAll(engine: Engine, inputs: string[], fields: Record<string, unknown>, opts: UpscaleOptions): Promise<number> {
  const jobs: Job[] = [];
  for (const input of inputs) {
    const job: Job = { input };
    jobs.push(job);
    try {
      const st = await stat(input).catch(() => undefined);
      if (!st?.isFile()) throw new CliError(`${input}: no such file`);
      const r = await engine.startTask(LOCAL_CALLER, {
        fields,
        file: [{ originalFileName: path.basename(input), data: { path: input } }],
      });
      job.taskId = r.taskId;
    } catch (e) {
      job.error = e instanceof CliError ? e.message : `${input}: ${messageOf(e)}`;
    }
  }

  const view = opts.json ? undefined : createProgressView(jobs.filter((j) => j.taskId).length);
  // Tasks run one after another, so each one's time is measured from the end of the previous one.
  let started = Date.now();
  for (const job of jobs) {
    if (!job.taskId) continue;
    for (;;) {
      const s = await engine.getTaskStatus(LOCAL_CALLER, { data: { taskId: job.taskId } });
      view?.update(path.basename(job.input), Number.parseInt(s.progress, 10));
      if (s.status === 'PROCESSED' || s.status === 'PROCESSING_FAILED') {
        job.status = s;
        break;
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    const s = job.status;
    if (s.status === 'PROCESSING_FAILED') {
      job.error = `${job.input}: ${s.error ?? 'upscaling failed'}`;
      view?.done();
      continue;
    }
    try {
      const lines: string[] = [];
      for (const f of s.files) {
        const out = await engine.openOutput(LOCAL_CALLER, job.taskId, f.fileName);
        const target = path.join(opts.out ?? path.dirname(job.input), f.fileName);
        await copyAtomic(out.path, target);
        f.path = path.resolve(target);
        lines.push(
          `${job.input} → ${target} (${f.dimensions.width}×${f.dimensions.height}, ${formatBytes(f.fileSize)}, ${((Date.now() - started) / 1000).toFixed(1)} s)`,
        );
      }
      view?.done();
      started = Date.now();
      if (!opts.json) for (const l of lines) process.stdout.write(`${l}\n`);
      for (const w of s.warnings ?? []) process.stderr.write(`crisp: warning: ${w}\n`);
    } catch (e) {
      job.error = `${job.input}: ${messageOf(e)}`;
      view?.done();
    }
  }
  view?.stop();

  if (opts.json) {
    const out = jobs.map((j) => j.status ?? { status: 'PROCESSING_FAILED', error: j.error });
    process.stdout.write(`${JSON.stringify(out.length === 1 ? out[0] : out, null, 2)}\n`);
  }
  const failed = jobs.filter((j) => j.error);
  for (const j of failed) process.stderr.write(`crisp: error: ${j.error}\n`);
  return failed.length > 0 ? 1 : 0;
}

function messageOf(e: unknown): string {
  if (isContractError(e)) return e.message.replace(/^Bad Request: /, '');
  return e instanceof Error ? (e.message.split('\n')[0] ?? '') : String(e);
}

async function copyAtomic(from: string, to: string): Promise<void> {
  const tmp = tempPathFor(to);
  try {
    await copyFile(from, tmp);
    await rename(tmp, to);
  } catch (e) {
    await rm(tmp, { force: true });
    throw e;
  }
}

function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1048576) return `${(n / 1024).toFixed(1)} KB`;
  return `${(n / 1048576).toFixed(1)} MB`;
}

/** --remote: each input through the service (small files as a file part, large ones via multipart). */
async function runRemoteUpscale(inputs: string[], fields: Record<string, unknown>, opts: UpscaleOptions): Promise<number> {
  let apiKey: string;
  try {
    apiKey = await resolveCliApiKey(opts.apiKeyFile);
  } catch (e) {
    throw new CliError(e instanceof ApiKeyMissingError ? e.message : String(e));
  }
  const s = parseTaskSettings(fields);
  const backend = createRemoteBackend({ baseUrl: opts.remote!, apiKey });
  const controller = new AbortController();
  const stop = () => controller.abort();
  process.once('SIGINT', stop);
  const view = opts.json ? undefined : createProgressView(inputs.length);
  const results: unknown[] = [];
  const failed: string[] = [];
  const taken = new Set<string>();
  try {
    for (const input of inputs) {
      const started = Date.now();
      try {
        const st = await stat(input).catch(() => undefined);
        if (!st?.isFile()) throw new CliError(`${input}: no such file`);
        const name = outputFileName(path.basename(input), s, taken);
        taken.add(name);
        const target = path.join(opts.out ?? path.dirname(input), name);
        const r = await backend.upscale({
          inputPath: input,
          inputName: path.basename(input),
          settings: s,
          outputPath: target,
          signal: controller.signal,
          onProgress: (p) => view?.update(path.basename(input), p),
        });
        view?.done();
        results.push({ status: 'PROCESSED', input, output: path.resolve(target), dimensions: r.dimensions, fileSize: r.fileSize, deductedCredits: r.creditsDeducted, warnings: r.warnings });
        if (!opts.json) {
          process.stdout.write(
            `${input} → ${target} (${r.dimensions.width}×${r.dimensions.height}, ${formatBytes(r.fileSize)}, ${((Date.now() - started) / 1000).toFixed(1)} s, ${r.creditsDeducted} credit${r.creditsDeducted === 1 ? '' : 's'})\n`,
          );
        }
        for (const w of r.warnings) process.stderr.write(`crisp: warning: ${w}\n`);
      } catch (e) {
        view?.done();
        const message = e instanceof CliError ? e.message : `${input}: ${errorMessage(e)}`;
        failed.push(message);
        results.push({ status: 'PROCESSING_FAILED', input, error: errorMessage(e) });
      }
    }
  } finally {
    view?.stop();
    process.off('SIGINT', stop);
  }
  if (opts.json) process.stdout.write(`${JSON.stringify(results.length === 1 ? results[0] : results, null, 2)}\n`);
  for (const f of failed) process.stderr.write(`crisp: error: ${f}\n`);
  return failed.length > 0 ? 1 : 0;
}
