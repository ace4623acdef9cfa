/**
 * Subject "models": the picker's list (catalog + imported custom models), downloads with progress, and a
 * watch on the custom models folder so an import from anywhere (the CLI included) shows up in the picker.
 */
import { watch, watchFile, unwatchFile, type FSWatcher } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import sharp from 'sharp';
import type { Dispatcher } from 'undici';
import { MODEL_NAMES, isModelName, sanitizeFileName, CrispError } from '../../engine/contract/index.js';
import {
  bundledModelsDir,
  CUSTOM_REGISTRY,
  customModelName,
  customModelsDir,
  customModelSummary,
  FACE_MODELS,
  installedFaceModels,
  licenceLabel,
  loadCustomModels,
  loadModelCatalog,
  type CatalogEntry,
  type FaceCatalogEntry,
} from '../../engine/core/index.js';
import { loadFaceFetch, loadModelFetch, loadModelImport, type FetchTarget } from '../../engine/convert/index.js';
import type { SettingsStore } from '../settings/settingsStore.js';
import type { ModelInfo } from './crispService.js';
import type { SubjectService } from './methodTable.js';
import type { ServiceEvents } from './serviceEvents.js';

export interface ModelDownloadOptions {
  /** Where and what to fetch for a catalog entry (default: the entry's own download spec). */
  target?: (entry: CatalogEntry) => FetchTarget;
  /** The same for a face restorer (GFPGAN): tests point it at a local server. */
  faceTarget?: (entry: FaceCatalogEntry) => FaceCatalogEntry;
  dispatcher?: Dispatcher;
  connectTimeoutMs?: number;
}

export interface ModelMethodsDeps {
  settings: SettingsStore;
  events: ServiceEvents;
  /** Folders searched for weights (the user's models folder included). */
  modelDirs: string[];
  /** The user's models folder: downloads land here, imports in <modelsDir>/custom. */
  modelsDir: string;
  download?: ModelDownloadOptions;
  /** Quiet period before a change in the custom models folder is reported (default 300 ms). */
  watchDebounceMs?: number;
  /** Where uploaded model files wait while they are converted (removed afterwards). */
  scratchDir: string;
  /** Desktop: opens a folder in the file manager. */
  openFolder?: (folder: string) => boolean | Promise<boolean>;
  /** Runs one local upscale (×4, PNG) of `input` with `model` into `output`: how previews are made. */
  renderPreview: (model: string, input: string, output: string) => Promise<void>;
  /** Where previews are kept, one PNG per model (and per queued image previewed on). */
  previewsDir: string;
  /** The input file of a queued item (previews on the person's own image); undefined when it is gone. */
  inputOf?: (itemId: string) => Promise<string | undefined>;
  /** Cloud mode: whether the service enhances faces (null: it does not say). */
  cloudFaceEnhancement?: () => Promise<boolean | null>;
  /** Cloud mode: the model names the service runs (null: it does not say, so every contract model is offered). */
  cloudModels?: () => Promise<string[] | null>;
}

/** Side of the square cut from the centre of a queued image for previews: ×4 makes it 256 px. */
export const PREVIEW_CROP_PX = 64;

/** The preview's default input: a small crop shipped beside the model catalog, the same for every model. */
const PREVIEW_SAMPLE = () => path.join(bundledModelsDir(), 'preview-sample.png');

/** The cloud list's face entry: not a model name anyone sends, only the toggle's signal. */
export const SERVICE_FACES = 'service:faces';

const IMPORTABLE = /\.(pth|pt|ckpt|safetensors|onnx)$/i;

/** Progress events at most this often per download (the final one is always sent). */
const DOWNLOAD_EVENT_INTERVAL_MS = 100;

/** The size a download entry shows: the verified byte count, else the catalog's estimate marked as such. */
export function downloadSizeOf(d: {
  size: number | null;
  approxBytes?: number | undefined;
}): Pick<ModelInfo, 'downloadSize' | 'downloadSizeApprox'> {
  if (d.size !== null) return { downloadSize: d.size };
  if (d.approxBytes !== undefined) return { downloadSize: d.approxBytes, downloadSizeApprox: true };
  return { downloadSize: null };
}

export function modelMethods(deps: ModelMethodsDeps): { methods: SubjectService<'models'>; close(): void } {
  const { events, modelDirs, modelsDir } = deps;

  async function localModels(): Promise<ModelInfo[]> {
    const [{ listModels: listCatalogModels }, { listCustomModels }] = await Promise.all([
      loadModelCatalog(),
      loadCustomModels(),
    ]);
    const catalog: ModelInfo[] = listCatalogModels(modelDirs).map((m) => ({
      name: m.name,
      title: m.title,
      description: m.description,
      kind: m.kind,
      scale: m.scale,
      installed: m.installed,
      licence: m.licence,
      ...(m.installed ? {} : downloadSizeOf(m.download)),
    }));
    let custom: ModelInfo[] = [];
    try {
      custom = (await listCustomModels(modelsDir)).map((m) => ({
        name: customModelName(m.name),
        title: m.name,
        description: `Imported from ${m.source} (${m.description}); ${customModelSummary(m)}.`,
        kind: 'custom',
        scale: m.scale,
        installed: true,
        licence: licenceLabel(m.licence),
      }));
    } catch {
      // A damaged registry must not hide the catalog; "crisp models list" reports the damage.
    }
    // Face restorers ride along as kind 'face' so the UI can tell whether "Enhance faces" can work.
    const faces: ModelInfo[] = installedFaceModels(modelDirs).map((m) => ({
      name: m.name,
      title: FACE_MODELS.find((e) => e.name === m.name)?.title ?? m.name,
      description: 'Face restorer for "Enhance faces".',
      kind: 'face',
      scale: 1,
      installed: true,
      licence: FACE_MODELS.find((e) => e.name === m.name)?.licence ?? 'as imported',
    }));
    // Catalog face restorers not on this computer: offered under Download models, with size and licence.
    const missingFaces: ModelInfo[] = FACE_MODELS.filter((e) => !faces.some((f) => f.name === e.name)).map((e) => ({
      name: e.name,
      title: e.title,
      description: 'Face restorer for "Enhance faces" (downloaded, checked and converted on this computer).',
      kind: 'face',
      scale: 1,
      installed: false,
      licence: e.licence,
      downloadSize: e.download.size,
    }));
    return [...catalog, ...custom, ...faces, ...missingFaces];
  }

  const watcher = watchCustomModels(customModelsDir(modelsDir), deps.watchDebounceMs ?? 300, () =>
    events.emit({ type: 'modelsChanged' }),
  );

  const downloads = new Map<string, Promise<ModelInfo>>();
  /** Running downloads' cancel switches, by model name. */
  const cancels = new Map<string, AbortController>();
  const previews = new Map<string, Promise<Uint8Array>>();
  const safeName = (name: string) => name.replace(/[^\w.-]+/g, '_');
  const previewFile = (name: string) => path.join(deps.previewsDir, `${safeName(name)}.png`);
  async function runDownload(entry: CatalogEntry | FaceCatalogEntry): Promise<ModelInfo> {
    const name = entry.name;
    const face = FACE_MODELS.find((e) => e.name === name);
    const controller = new AbortController();
    cancels.set(name, controller);
    const faceTarget = face ? (deps.download?.faceTarget?.(face) ?? face) : undefined;
    const target = faceTarget ?? deps.download?.target?.(entry as CatalogEntry) ?? (entry as CatalogEntry);
    let last: { received: number; total: number | null } = { received: 0, total: target.download.size };
    let lastSent = 0;
    events.emit({ type: 'modelDownload', name, received: 0, total: last.total, state: 'downloading' });
    const options = {
      modelsDir,
      signal: controller.signal,
      ...(deps.download?.dispatcher ? { dispatcher: deps.download.dispatcher } : {}),
      ...(deps.download?.connectTimeoutMs ? { connectTimeoutMs: deps.download.connectTimeoutMs } : {}),
      onProgress: (received: number, total: number | null) => {
        last = { received, total };
        const now = Date.now();
        if (now - lastSent < DOWNLOAD_EVENT_INTERVAL_MS && received !== total) return;
        lastSent = now;
        events.emit({ type: 'modelDownload', name, received, total, state: 'downloading' });
      },
    };
    try {
      if (faceTarget) {
        const { fetchFaceModel } = await loadFaceFetch();
        await fetchFaceModel(faceTarget, options);
      } else {
        const { fetchModel } = await loadModelFetch();
        await fetchModel(target as FetchTarget, options);
      }
    } catch (e) {
      if (controller.signal.aborted) {
        // The partial file stays in .downloads, so downloading again resumes where this one stopped.
        events.emit({ type: 'modelDownload', name, ...last, state: 'cancelled' });
        throw new Error(`The download of ${entry.title} was cancelled.`);
      }
      const error = `Could not install ${entry.title} (${name}): ${((e as Error).message ?? String(e)).split('\n')[0]}`;
      events.emit({ type: 'modelDownload', name, ...last, state: 'failed', error });
      throw new Error(error);
    } finally {
      cancels.delete(name);
    }
    events.emit({
      type: 'modelDownload',
      name,
      received: last.received,
      total: last.total ?? last.received,
      state: 'installed',
    });
    events.emit({ type: 'modelsChanged' });
    const info = (await localModels()).find((m) => m.name === name);
    if (!info) throw new Error(`${name} is missing from the catalog`);
    return info;
  }

  return {
    methods: {
      async listModels() {
        const current = await deps.settings.get();
        if (current.mode === 'cloud') {
          const { listModels: listCatalogModels } = await loadModelCatalog();
          const local = new Map(listCatalogModels(modelDirs).map((m) => [m.name, m]));
          // Only what the service runs, in its order; "installed" means "offered by the service". The saved
          // choice stays listed (not installed) when the service's list lacks it, so the picker can say so.
          const offered = (await deps.cloudModels?.()) ?? null;
          const names: string[] = [...(offered ?? MODEL_NAMES)];
          // Only against a known list: a service that does not say may well run the saved choice.
          if (offered && !names.includes(current.model)) names.push(current.model);
          const models: ModelInfo[] = names.map((name) => {
            const m = isModelName(name) ? local.get(name) : undefined;
            return {
              name,
              title: m?.title ?? name.replace(/^custom:/, ''),
              description: m?.description ?? '',
              kind: m?.kind ?? (name.startsWith('custom:') ? 'custom' : 'photo'),
              scale: m?.scale ?? 4,
              installed: offered === null || offered.includes(name),
              licence: m?.licence ?? '',
            };
          });
          // The service's face restorer, as the local ones ride along: "Enhance faces" is offered when the service
          // says it has one, or does not say (it then answers 400 itself when it has none).
          const faces = (await deps.cloudFaceEnhancement?.()) ?? null;
          models.push({
            name: SERVICE_FACES,
            title: 'Service face enhancement',
            description: 'Faces are restored by the service (+1 credit per image).',
            kind: 'face',
            scale: 1,
            installed: faces !== false,
            licence: 'service',
          });
          return models;
        }
        return localModels();
      },
      async downloadModel(name) {
        if ((await deps.settings.get()).mode === 'cloud')
          throw new CrispError('bad-request', 'Cloud mode needs no downloads: the service has every model.');
        const faceEntry = FACE_MODELS.find((e) => e.name === name);
        if (!isModelName(name) && !faceEntry)
          throw new CrispError('bad-request', `${JSON.stringify(name)} is not a model Crisp can download.`);
        const entry = faceEntry ?? (await loadModelCatalog()).loadCatalog().find((e) => e.name === name);
        if (!entry) throw new CrispError('bad-request', `${name} is missing from the model catalog.`);
        let running = downloads.get(name);
        if (!running) {
          running = runDownload(entry).finally(() => downloads.delete(name));
          downloads.set(name, running);
        }
        return running;
      },
      async cancelDownload(name) {
        // Nothing running under that name is not an error: the download may have just finished.
        cancels.get(name)?.abort();
      },
      async importModel(fileName, bytes) {
        const safe = sanitizeFileName(fileName);
        if (!IMPORTABLE.test(safe))
          throw new CrispError(
            'bad-request',
            `${safe} is not a model file Crisp can import (use .pth, .safetensors, .ckpt or .onnx; ncnn models with \`crisp models import\`).`,
          );
        const [{ defaultCustomName }, { importCustomModel }] = await Promise.all([
          loadCustomModels(),
          loadModelImport(),
        ]);
        await mkdir(deps.scratchDir, { recursive: true });
        const dir = await mkdtemp(path.join(deps.scratchDir, 'import-'));
        try {
          const file = path.join(dir, safe);
          await writeFile(file, bytes);
          const name = defaultCustomName(safe);
          let imported;
          try {
            imported = await importCustomModel(file, { modelsDir, name });
          } catch (e) {
            throw new CrispError(
              'bad-request',
              `Could not import ${safe}: ${((e as Error).message ?? String(e)).split('\n')[0]}`,
            );
          }
          // A re-import under the same name replaces the model, so its old preview goes too.
          previews.delete(customModelName(imported.name));
          await rm(previewFile(customModelName(imported.name)), { force: true });
          events.emit({ type: 'modelsChanged' });
          return {
            name: customModelName(imported.name),
            title: imported.name,
            description: `Imported from ${imported.source} (${imported.description}).`,
            kind: 'custom',
            scale: imported.scale,
            installed: true,
            licence: 'as imported',
          };
        } finally {
          await rm(dir, { recursive: true, force: true });
        }
      },
      async modelPreview(name, itemId, which = 'after') {
        if ((await deps.settings.get()).mode === 'cloud')
          throw new CrispError('bad-request', 'Previews are made on this computer: switch to Local to see them.');
        const model = (await localModels()).find((m) => m.name === name);
        if (!model) throw new CrispError('bad-request', `${name} is not a model Crisp knows.`);
        // The input: the centre of the person's image when one is named, else the shipped sample crop.
        let input = PREVIEW_SAMPLE();
        if (itemId !== undefined) {
          const source = await deps.inputOf?.(itemId);
          if (!source) throw new CrispError('bad-request', 'That image is no longer in the queue: choose another one.');
          input = await previewCrop(source, path.join(deps.previewsDir, 'crops', `${safeName(itemId)}.png`));
        }
        if (which === 'before') return { mime: 'image/png', bytes: new Uint8Array(await readFile(input)) };
        if (!model.installed)
          throw new CrispError('bad-request', `${model.title} is not installed: download it first to see its preview.`);
        // One render per model and image, shared by concurrent asks; a failure is not cached.
        const key = itemId === undefined ? name : `${name}@${itemId}`;
        let pending = previews.get(key);
        if (!pending) {
          pending = (async () => {
            const file = previewFile(key);
            const cached = await readFile(file).catch(() => undefined);
            if (cached) return new Uint8Array(cached);
            await mkdir(deps.previewsDir, { recursive: true });
            try {
              await deps.renderPreview(name, input, file);
            } catch (e) {
              throw new Error(
                `Could not make a preview with ${model.title}: ${((e as Error).message ?? String(e)).split('\n')[0]}`,
              );
            }
            return new Uint8Array(await readFile(file));
          })();
          pending.catch(() => previews.delete(key));
          previews.set(key, pending);
        }
        return { mime: 'image/png', bytes: await pending };
      },
      async removeModel(name) {
        const id = name.replace(/^custom:/, '');
        const [{ removeCustomModel }, { defaultModel }] = await Promise.all([loadCustomModels(), loadModelCatalog()]);
        if (!(await removeCustomModel(modelsDir, id)))
          throw new CrispError('bad-request', `${name} is not an imported model (it may have been removed already).`);
        previews.delete(name);
        await rm(previewFile(name), { force: true });
        if ((await deps.settings.get()).model === name)
          events.emit({ type: 'settings', settings: await deps.settings.update({ model: defaultModel(modelDirs) }) });
        events.emit({ type: 'modelsChanged' });
      },
      async openModelsFolder() {
        if (!deps.openFolder) return false;
        const dir = customModelsDir(modelsDir);
        await mkdir(dir, { recursive: true });
        return deps.openFolder(dir);
      },
    },
    close: () => watcher.close(),
  };
}

/** The centre of `source`, at most PREVIEW_CROP_PX square, as a PNG at `file` (made once per image). */
async function previewCrop(source: string, file: string): Promise<string> {
  if (await stat(file).catch(() => undefined)) return file;
  try {
    const meta = await sharp(source).metadata();
    const width = meta.autoOrient?.width ?? meta.width;
    const height = meta.autoOrient?.height ?? meta.height;
    const side = Math.min(PREVIEW_CROP_PX, width, height);
    await mkdir(path.dirname(file), { recursive: true });
    await sharp(source)
      .autoOrient()
      .extract({
        left: Math.floor((width - side) / 2),
        top: Math.floor((height - side) / 2),
        width: side,
        height: side,
      })
      .png()
      .toFile(file);
  } catch {
    throw new CrispError('bad-request', 'Crisp cannot read that image for a preview: choose another one.');
  }
  return file;
}

/**
 * Watches the custom models folder; while it does not exist, polls its registry file instead (the folder
 * is not created just to be watched, and polling one path is cheap).
 */
function watchCustomModels(customDir: string, debounceMs: number, onChange: () => void): { close(): void } {
  const registryFile = path.join(customDir, CUSTOM_REGISTRY);
  let watcher: FSWatcher | undefined;
  let polling = false;
  let timer: NodeJS.Timeout | undefined;
  let closed = false;
  const changed = () => {
    clearTimeout(timer);
    timer = setTimeout(onChange, debounceMs);
  };
  const onRegistryStat = (cur: { mtimeMs: number }) => {
    if (cur.mtimeMs === 0) return;
    // The folder exists now: switch to a real watch.
    stopPolling();
    armWatch();
    changed();
  };
  const stopPolling = () => {
    if (polling) unwatchFile(registryFile, onRegistryStat);
    polling = false;
  };
  function armWatch(): void {
    if (closed || watcher) return;
    try {
      watcher = watch(customDir, { persistent: false }, changed);
      watcher.on('error', () => {
        // The folder was removed (or became unreadable): wait for it to come back.
        watcher?.close();
        watcher = undefined;
        changed();
        armPolling();
      });
    } catch {
      armPolling();
    }
  }
  function armPolling(): void {
    if (closed || polling) return;
    polling = true;
    watchFile(registryFile, { persistent: false, interval: 1000 }, onRegistryStat);
  }
  armWatch();
  return {
    close() {
      closed = true;
      watcher?.close();
      watcher = undefined;
      stopPolling();
      clearTimeout(timer);
    },
  };
}
