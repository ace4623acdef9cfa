/**
 * The renderer's test double, generated from the method table (app/service/methodTable.ts): every
 * CrispService method is a wrapper that checks its arguments with the transports' schemas, records the
 * call and hands it to the real app-layer service (real settings store, real job queue, real credits
 * and results modules) in a temporary folder. Only the edges are scripted: the backend's work
 * (ScriptedEngine, moved by `step`/`finishAll`), the models subject (no catalog on disk) and the secret
 * store (memory). There is no second queue here to drift from the real one.
 * DOM-free on purpose: Node-side bridge and Electron tests use it too.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { MODEL_NAMES } from '../../engine/contract/enums.js';
import { DEFAULT_SETTINGS as APP_DEFAULTS } from '../../app/settings/settingsSchema.js';
import { createService, type ServiceHandle } from '../../app/service/createService.js';
import type { CrispService, JobItem, ModelInfo, ServiceEvent, Settings } from '../../app/service/crispService.js';
import { SERVICE_METHODS, SERVICE_TABLE, type SubjectService } from '../../app/service/methodTable.js';
import { SERVICE_FACES } from '../../app/service/modelMethods.js';
import { createMemorySecretStore, API_KEY_SECRET } from '../../app/secrets/secretStore.js';
import { parseServiceArgs } from '../../app/service/serviceArgs.js';
import { PNG_1x1, ScriptedEngine, type ScriptOptions } from './scriptedBackend.js';

export { PNG_1x1 } from './scriptedBackend.js';

/** The app's defaults, with a fake service URL and the fastest model (what the component tests expect). */
export const DEFAULT_SETTINGS: Settings = {
  ...APP_DEFAULTS,
  baseUrl: 'https://api.example.test',
  model: 'digital-art-4x',
  scale: 4,
};

export interface FakeOptions extends ScriptOptions {
  notInstalled?: string[];
  /** Local mode without any face model installed. */
  noFaceModel?: boolean;
  /** Cloud mode: the service's get-capabilities answer about faces (default true). */
  serviceFaces?: boolean;
  /** Start with an API key stored. */
  apiKey?: string;
  /** Settings for a first start (over DEFAULT_SETTINGS). */
  settings?: Partial<Settings>;
}

export interface FakeCall {
  method: string;
  /** Bytes are recorded as their length (a `bytesIn` argument). */
  args: unknown[];
}

export interface FakeService extends CrispService {
  readonly calls: FakeCall[];
  /** The latest queue items and settings the service reported (kept current from its own events). */
  readonly items: JobItem[];
  readonly settings: Settings;
  readonly balance: number;
  readonly apiKey: string | undefined;
  /** The temporary data folder (drops/, queue.json, settings.json). */
  readonly dataDir: string;
  /** Writes real PNG files into the data folder and answers their paths (for addPaths). */
  images(...names: string[]): Promise<string[]>;
  /** Moves the running item forward by `percent` (finishing it at 100) and waits until the queue shows it. */
  step(percent?: number): Promise<void>;
  /** Runs the active batch to its end. */
  finishAll(): Promise<void>;
  progressDownload(name: string, received: number, total?: number): void;
  /** What the browser bridge does once a download was sent (ServiceHandle.markDownloaded, off the wire). */
  markDownloaded(ids: string[]): Promise<void>;
  finishDownload(name: string, error?: string): Promise<void>;
  emit(event: ServiceEvent): void;
  close(): Promise<void>;
}

const open = new Set<FakeService>();

/** Closes every fake made so far (afterEach): stops their queues and removes their folders. */
export async function closeFakes(): Promise<void> {
  const all = [...open];
  open.clear();
  await Promise.all(all.map((f) => f.close()));
}

/** A scripted models subject: the contract's models, some marked not installed, downloads moved by the test, imports kept in memory. */
/** What the real service layer lists in Cloud mode for the service's face restorer (modelMethods.ts). */
function serviceFaceEntry(installed: boolean): ModelInfo {
  return {
    name: SERVICE_FACES,
    title: 'Service face enhancement',
    description: 'Faces are restored by the service (+1 credit per image).',
    kind: 'face',
    scale: 1,
    installed,
    licence: 'service',
  };
}

function scriptedModels(
  notInstalled: Set<string>,
  mode: () => Settings['mode'],
  emit: (e: ServiceEvent) => void,
  noFaceModel = false,
  serviceFaces = true,
) {
  // Like the real service: GFPGAN v1.4 is listed either way, offered for download while it is not installed.
  if (noFaceModel) notInstalled.add('gfpgan-1.4');
  const faceEntry = (): ModelInfo => ({
    name: 'gfpgan-1.4',
    title: 'GFPGAN v1.4',
    description: 'Face restorer.',
    kind: 'face',
    scale: 1,
    installed: !notInstalled.has('gfpgan-1.4'),
    licence: 'Apache-2.0',
    ...(notInstalled.has('gfpgan-1.4') ? { downloadSize: 348_632_874 } : {}),
  });
  const pending = new Map<string, { resolve: (m: ModelInfo) => void; reject: (e: Error) => void }>();
  const custom: ModelInfo[] = [];
  const methods: SubjectService<'models'> = {
    async importModel(fileName, bytes) {
      if (!/\.(pth|safetensors|ckpt|onnx)$/i.test(fileName))
        throw new Error(`${fileName} is not a model file Crisp can import.`);
      const name = fileName.replace(/\.[^.]+$/, '');
      const info: ModelInfo = {
        name: `custom:${name}`,
        title: name,
        description: `Imported from ${fileName} (${bytes.byteLength} bytes).`,
        kind: 'custom',
        // As the real import measures it; here from the file name's "1x"/"2x"… prefix (OpenModelDB's naming).
        scale: Number(/^(\d)x/i.exec(name)?.[1] ?? 4),
        installed: true,
        licence: /-NC$/.test(name) ? 'CC-BY-NC-4.0 (non-commercial)' : 'unknown',
      };
      custom.push(info);
      emit({ type: 'modelsChanged' });
      return info;
    },
    async removeModel(name) {
      const at = custom.findIndex((m) => m.name === name);
      if (at < 0) throw new Error(`${name} is not an imported model.`);
      custom.splice(at, 1);
      emit({ type: 'modelsChanged' });
    },
    async openModelsFolder() {
      return false;
    },
    async modelPreview(name, _itemId, which = 'after') {
      if (mode() === 'cloud') throw new Error('Previews are made on this computer: switch to Local to see them.');
      if (which === 'after' && notInstalled.has(name))
        throw new Error(`${name} is not installed: download it first to see its preview.`);
      return { mime: 'image/png', bytes: PNG_1x1 };
    },
    async listModels() {
      return [
        ...MODEL_NAMES.map((name) => ({
          name,
          title: name
            .replace(/-4x$/, '')
            .replace(/(^|-)(\w)/g, (_, d: string, c: string) => `${d ? ' ' : ''}${c.toUpperCase()}`),
          description: `The ${name} model.`,
          kind: 'photo' as const,
          scale: 4,
          installed: mode() === 'cloud' || !notInstalled.has(name),
          licence: 'BSD-3-Clause',
          ...(mode() === 'local' && notInstalled.has(name) ? { downloadSize: 17_000_000 } : {}),
        })),
        ...(mode() === 'local' ? [...custom, faceEntry()] : [serviceFaceEntry(serviceFaces)]),
      ];
    },
    async downloadModel(name) {
      if (mode() === 'cloud') throw new Error('Cloud mode needs no downloads: the service has every model.');
      emit({ type: 'modelDownload', name, received: 0, total: 1000, state: 'downloading' });
      return new Promise((resolve, reject) => pending.set(name, { resolve, reject }));
    },
    async cancelDownload(name) {
      const p = pending.get(name);
      if (!p) return;
      pending.delete(name);
      emit({ type: 'modelDownload', name, received: 0, total: 1000, state: 'cancelled' });
      p.reject(new Error(`The download of ${name} was cancelled.`));
    },
  };
  const control = {
    progress: (name: string, received: number, total = 1000) =>
      emit({ type: 'modelDownload', name, received, total, state: 'downloading' }),
    async finish(name: string, error?: string) {
      const p = pending.get(name);
      pending.delete(name);
      if (error) {
        emit({ type: 'modelDownload', name, received: 0, total: 1000, state: 'failed', error });
        p?.reject(new Error(error));
        return;
      }
      notInstalled.delete(name);
      emit({ type: 'modelDownload', name, received: 1000, total: 1000, state: 'installed' });
      emit({ type: 'modelsChanged' });
      const info = (await methods.listModels()).find((m) => m.name === name);
      if (info) p?.resolve(info);
    },
  };
  return { methods, control };
}

export async function createFakeService(options: FakeOptions = {}): Promise<FakeService> {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'crisp-fake-'));
  const engine = new ScriptedEngine(options);
  const secrets = createMemorySecretStore(options.apiKey ? { [API_KEY_SECRET]: options.apiKey } : {});
  let apiKeyMirror = options.apiKey;
  const trackedSecrets = {
    get: secrets.get,
    async set(name: string, value: string | null | undefined) {
      await secrets.set(name, value);
      if (name === API_KEY_SECRET) apiKeyMirror = value ?? undefined;
    },
  };
  let settingsMirror: Settings = { ...DEFAULT_SETTINGS, ...options.settings };
  const listeners = new Set<(e: ServiceEvent) => void>();
  const emitExtra = (e: ServiceEvent) => {
    for (const l of [...listeners]) l(e);
  };
  const models = scriptedModels(
    new Set(options.notInstalled ?? []),
    () => settingsMirror.mode,
    emitExtra,
    options.noFaceModel ?? false,
    options.serviceFaces ?? true,
  );

  const { version: _v, ...defaults } = settingsMirror;
  const real: ServiceHandle = await createService({
    dataDir,
    secrets: trackedSecrets,
    modelDirs: [],
    modelsDir: path.join(dataDir, 'models'),
    settingsDefaults: defaults,
    presetsFile: path.join(dataDir, 'presets.json'),
    backendFactory: (s) => engine.backend(s.mode),
    models: models.methods,
  });
  settingsMirror = await real.getSettings();
  let items: JobItem[] = [];
  let batchesFinished = 0;
  real.subscribe((e) => {
    if (e.type === 'batchFinished') batchesFinished++;
    if (e.type === 'queue') items = e.queue.items;
    if (e.type === 'settings') settingsMirror = e.settings;
  });

  const calls: FakeCall[] = [];
  // Generated from the table: one checked, recorded pass-through per method.
  const generated = Object.fromEntries(
    SERVICE_METHODS.map((method) => [
      method,
      async (...args: unknown[]) => {
        const wire = SERVICE_TABLE[method].wire;
        calls.push({
          method,
          args: wire === 'bytesIn' ? args.map((a) => (a instanceof Uint8Array ? a.byteLength : a)) : args,
        });
        const checked = parseServiceArgs(method, args);
        const result = await (real[method] as (...a: unknown[]) => Promise<unknown>)(...checked);
        if (method === 'updateSettings') settingsMirror = result as Settings;
        return result;
      },
    ]),
  ) as unknown as Omit<CrispService, 'subscribe'>;

  const running = async () => (await real.getQueue()).running;
  const settled = async (id: string) => {
    for (let i = 0; i < 2000; i++) {
      const item = (await real.getQueue()).items.find((x) => x.id === id);
      if (!item || item.status !== 'running') return;
      await new Promise((r) => setTimeout(r, 5));
    }
    throw new Error('the queue never settled the item');
  };

  const fake: FakeService = {
    ...generated,
    subscribe(listener) {
      listeners.add(listener);
      const off = real.subscribe(listener);
      return () => {
        listeners.delete(listener);
        off();
      };
    },
    calls,
    get items() {
      return items;
    },
    get settings() {
      return settingsMirror;
    },
    get balance() {
      return engine.balance;
    },
    get apiKey() {
      return apiKeyMirror;
    },
    dataDir,
    async images(...names) {
      const dir = path.join(dataDir, 'inputs');
      await mkdir(dir, { recursive: true });
      return Promise.all(
        names.map(async (n) => {
          const file = path.join(dir, n);
          await writeFile(file, PNG_1x1);
          return file;
        }),
      );
    },
    async step(percent = 50) {
      const job = await engine.activeJob(running);
      if (!job) return;
      const id = items.find((i) => i.status === 'running' && i.inputPath === job.request.inputPath)?.id;
      await engine.advance(job, percent);
      if (job.percent >= 100 && id) await settled(id);
    },
    async finishAll() {
      const before = batchesFinished;
      // An Upscale just clicked may not have begun its run yet: while images wait, give it a moment.
      for (let i = 0; i < 400 && !(await running()) && items.some((x) => x.status === 'queued'); i++)
        await new Promise((r) => setTimeout(r, 5));
      if (!(await running())) return;
      while (await running()) await fake.step(100);
      // The run ends with its batchFinished event; wait for it, so the test sees the whole ending.
      for (let i = 0; batchesFinished === before && i < 2000; i++) await new Promise((r) => setTimeout(r, 5));
    },
    progressDownload: models.control.progress,
    markDownloaded: (ids) => real.markDownloaded(ids),
    finishDownload: models.control.finish,
    emit: emitExtra,
    async close() {
      open.delete(fake);
      await real.close();
      await rm(dataDir, { recursive: true, force: true, maxRetries: 5, retryDelay: 20 });
    },
  };
  open.add(fake);
  return fake;
}
