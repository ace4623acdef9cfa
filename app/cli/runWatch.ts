/**
 * The run of `crisp watch`: a FolderWatcher (app/watch/folderWatcher.ts) over the local engine in a worker
 * process, with a preset's options. One line per image on stdout (`input → output`), failures on stderr.
 */
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { loadModelCatalog, modelSearchDirs, resolveFaceModel, userModelsDir } from '../../engine/core/index.js';
import { hasErrorCode, isModelName } from '../../engine/contract/index.js';
import { jobOutputName, jobSettingsFrom, upscaleSettingsFor } from '../jobs/jobSettings.js';
import { openPresetStore } from '../settings/presetStore.js';
import { parseOptionText } from '../settings/optionSchemas.js';
import type { PresetOptions } from '../settings/presets.js';
import { acceptedValues, UPSCALE_DEFAULTS, UPSCALE_OPTIONS } from '../settings/upscaleOptions.js';
import { checkGeometry } from './readUpscaleFlags.js';
import { checkWatchFolders, FolderWatcher } from '../watch/folderWatcher.js';
import { usageError } from './cliError.js';
import { paint } from './terminal.js';

/**
 * Test-only: CRISP_TEST_WATCH_GATE names a folder; before its k-th image the watcher writes k to `reached`
 * there and waits until `allow` holds a number ≥ k. Never set outside tests.
 */
function testGate(dir: string | undefined): ((k: number) => Promise<void>) | undefined {
  if (!dir) return undefined;
  return async (k) => {
    await writeFile(path.join(dir, 'reached'), String(k));
    for (;;) {
      const allow = Number(await readFile(path.join(dir, 'allow'), 'utf8').catch(() => 'Infinity'));
      if (allow >= k) return;
      await new Promise((r) => setTimeout(r, 20));
    }
  };
}

export async function runWatch(dir: string, flags: Record<string, unknown>): Promise<number> {
  const watched = path.resolve(dir);
  if (!(await stat(watched).catch(() => undefined))?.isDirectory())
    throw usageError(`${dir} is not a folder: crisp watch watches a folder for new images`);
  const store = openPresetStore();
  let preset;
  try {
    preset = typeof flags.preset === 'string' ? await store.get(flags.preset) : await store.getDefault();
  } catch (e) {
    if (hasErrorCode(e, 'preset-refused')) throw usageError(`--preset: ${e.message}`);
    throw e;
  }
  const poll = Number(flags.poll);
  if (!Number.isInteger(poll) || poll < 10 || poll > 600_000)
    throw usageError(`--poll must be a number of milliseconds from 10 to 600000, not '${String(flags.poll)}'`);
  const outDir = path.resolve(
    typeof flags.out === 'string' ? flags.out : preset.options.outputFolder || path.join(watched, 'upscaled'),
  );
  // A refusal (watch-refused) is printed as its own sentence.
  checkWatchFolders(watched, outDir);
  // A replaced input replaces its output: the same image, a newer version.
  const settings = jobSettingsFrom(
    {
      ...UPSCALE_DEFAULTS,
      ...preset.options,
      ...watchSize(flags, preset.options),
      outputFolder: outDir,
      overwrite: 'replace',
    },
    'local',
  );

  // Checked before watching, not on every arriving image: the model, and with faces the face model.
  const { resolveModel } = await loadModelCatalog();
  try {
    if (isModelName(settings.model)) resolveModel(settings.model, modelSearchDirs());
    if (settings.face) resolveFaceModel(settings.faceModel || undefined, modelSearchDirs());
  } catch (e) {
    if (hasErrorCode(e, 'model-not-installed', 'face-model-missing'))
      throw usageError(`preset "${preset.name}": ${e.message}`);
    throw e;
  }

  const engineDir = await mkdtemp(path.join(os.tmpdir(), 'crisp-watch-'));
  const { createLocalBackend } = await import('../backends/local/localBackend.js');
  const backend = createLocalBackend({
    dataDir: engineDir,
    modelDirs: modelSearchDirs(),
    customModelsDir: userModelsDir(),
  });
  let watcher: FolderWatcher;
  try {
    watcher = new FolderWatcher({
      dir: watched,
      recursive: Boolean(flags.recursive),
      outDir,
      pollMs: poll,
      outputName: (input) => jobOutputName(settings, input),
      upscale: async (input, output, signal, source) => {
        await backend.upscale({
          inputPath: source,
          inputName: path.basename(input),
          settings: upscaleSettingsFor(settings),
          outputPath: output,
          signal,
        });
      },
      onEvent: (e) => {
        if (e.type === 'done') process.stdout.write(`${e.input} → ${e.output}\n`);
        if (e.type === 'failed') process.stderr.write(`${paint.error('crisp: error:')} ${e.input}: ${e.error}\n`);
      },
      ...(process.env.CRISP_TEST_WATCH_GATE ? { beforeImage: testGate(process.env.CRISP_TEST_WATCH_GATE) } : {}),
    });
  } catch (e) {
    await backend.close();
    await rm(engineDir, { recursive: true, force: true });
    throw e;
  }
  await watcher.start();
  process.stderr.write(
    `crisp: watching ${watched}${flags.recursive ? ' and its sub-folders' : ''} with preset "${preset.name}" into ${outDir} (Ctrl-C to stop)\n`,
  );
  await new Promise<void>((resolve) => {
    process.once('SIGINT', resolve);
    process.once('SIGTERM', resolve);
  });
  await watcher.stop();
  await backend.close();
  await rm(engineDir, { recursive: true, force: true });
  const c = watcher.counts();
  process.stderr.write(`crisp: stopped watching: ${c.done} upscaled, ${c.failed} failed in all.\n`);
  return 0;
}

/**
 * `--width`, `--height`, `--long-side`: an exact size for every image of the watch, replacing the preset's
 * scale or size; checked as `crisp upscale` checks them. None given: the preset's own geometry.
 */
function watchSize(
  flags: Record<string, unknown>,
  preset: PresetOptions,
): Pick<PresetOptions, 'width' | 'height' | 'longSide'> {
  const out: Record<string, unknown> = { ...preset };
  for (const [key, flag] of [
    ['width', '--width'],
    ['height', '--height'],
    ['longSide', '--long-side'],
  ] as const) {
    const given = flags[key];
    if (given === undefined) continue;
    const r = parseOptionText(key, String(given));
    if (!r.ok) throw usageError(`${flag} must be ${acceptedValues(UPSCALE_OPTIONS[key])}, not '${String(given)}'`);
    out[key] = r.value;
  }
  checkGeometry(flags, out, preset);
  return {
    width: out.width as number | null,
    height: out.height as number | null,
    longSide: out.longSide as number | null,
  };
}
