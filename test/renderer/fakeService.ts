/**
 * An in-memory CrispService for component and bridge tests: no engine, no files. Progress is driven by
 * the test (`step`, `finishAll`), so tests are deterministic and fast. DOM-free on purpose (it is also
 * used by Node-side bridge tests).
 */
import { MODEL_NAMES } from '../../engine/contract/enums.js';
import { DEFAULT_SETTINGS as APP_DEFAULTS } from '../../app/settings/settingsSchema.js';
import type { AccountView, CrispService, JobItem, ModelInfo, QueueSnapshot, ServiceEvent, Settings } from '../../app/service/crispService.js';

/** The app's defaults, with a fake service URL and the fastest model (what the component tests expect). */
export const DEFAULT_SETTINGS: Settings = { ...APP_DEFAULTS, baseUrl: 'https://api.example.test', model: 'digital-art-4x', scale: 4 };

// 1×1 PNG: enough for <img> and for byte round-trips.
export const PNG_1x1 = Uint8Array.from(
  atob('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=='),
  (c) => c.charCodeAt(0),
);

export interface FakeOptions {
  balance?: number;
  creditsPerImage?: number;
  notInstalled?: string[];
  /** Local mode without any face model installed. */
  noFaceModel?: boolean;
  failNames?: RegExp;
}

export class FakeCrispService implements CrispService {
  settings: Settings = { ...DEFAULT_SETTINGS };
  items: JobItem[] = [];
  apiKey: string | null = null;
  running = false;
  calls: { method: string; args: unknown[] }[] = [];
  balance: number;
  readonly creditsPerImage: number;
  private listeners = new Set<(e: ServiceEvent) => void>();
  private nextId = 1;
  private runTotal = 0;

  constructor(private readonly options: FakeOptions = {}) {
    this.balance = options.balance ?? 10;
    this.creditsPerImage = options.creditsPerImage ?? 1;
  }

  private log(method: string, args: unknown[]) {
    this.calls.push({ method, args });
  }
  emit(event: ServiceEvent) {
    for (const l of [...this.listeners]) l(event);
  }
  snapshot(): QueueSnapshot {
    const finished = this.items.filter((i) => !['queued', 'running'].includes(i.status)).length;
    const total = this.running ? this.runTotal : this.items.length;
    const done = this.items.reduce((s, i) => s + (i.status === 'queued' ? 0 : i.status === 'running' ? i.percent : 100), 0);
    return { items: this.items.map((i) => ({ ...i })), finished, total, percent: total ? done / total : 0, running: this.running };
  }
  private pushQueue() {
    this.emit({ type: 'queue', queue: this.snapshot() });
  }

  async getSettings() {
    return { ...this.settings };
  }
  async updateSettings(patch: Partial<Omit<Settings, 'version'>>) {
    this.log('updateSettings', [patch]);
    this.settings = { ...this.settings, ...patch };
    return { ...this.settings };
  }
  async setApiKey(key: string | null) {
    this.log('setApiKey', [key]);
    this.apiKey = key;
  }
  async hasApiKey() {
    return this.apiKey !== null;
  }
  /** Downloads started with downloadModel, settled by the test (`progressDownload`, `finishDownload`). */
  private pendingDownloads = new Map<string, { resolve: (m: ModelInfo) => void; reject: (e: Error) => void }>();
  async downloadModel(name: string): Promise<ModelInfo> {
    this.log('downloadModel', [name]);
    if (this.settings.mode === 'cloud') throw new Error('Cloud mode needs no downloads: the service has every model.');
    this.emit({ type: 'modelDownload', name, received: 0, total: 1000, state: 'downloading' });
    return new Promise((resolve, reject) => this.pendingDownloads.set(name, { resolve, reject }));
  }
  progressDownload(name: string, received: number, total = 1000) {
    this.emit({ type: 'modelDownload', name, received, total, state: 'downloading' });
  }
  async finishDownload(name: string, error?: string) {
    const pending = this.pendingDownloads.get(name);
    this.pendingDownloads.delete(name);
    if (error) {
      this.emit({ type: 'modelDownload', name, received: 0, total: 1000, state: 'failed', error });
      pending?.reject(new Error(error));
      return;
    }
    this.options.notInstalled = (this.options.notInstalled ?? []).filter((n) => n !== name);
    this.emit({ type: 'modelDownload', name, received: 1000, total: 1000, state: 'installed' });
    this.emit({ type: 'modelsChanged' });
    pending?.resolve((await this.listModels()).find((m) => m.name === name)!);
  }
  async listModels(): Promise<ModelInfo[]> {
    const faces: ModelInfo[] = this.options.noFaceModel
      ? []
      : [{ name: 'gfpgan-1.4', title: 'gfpgan-1.4', description: 'Face restorer.', kind: 'face', scale: 1, installed: true, licence: 'Apache-2.0' }];
    return [...MODEL_NAMES.map((name) => ({
      name,
      title: name.replace(/-4x$/, '').replace(/(^|-)(\w)/g, (_, d: string, c: string) => `${d ? ' ' : ''}${c.toUpperCase()}`),
      description: `The ${name} model.`,
      kind: 'photo' as const,
      scale: 4,
      installed: this.settings.mode === 'cloud' || !(this.options.notInstalled ?? []).includes(name),
      licence: 'BSD-3-Clause',
    })), ...faces];
  }
  private add(name: string, path: string): JobItem {
    const item: JobItem = { id: `item-${this.nextId++}`, inputPath: path, inputName: name, status: 'queued', percent: 0, inputDimensions: { width: 10, height: 8 } };
    this.items.push(item);
    return item;
  }
  async addPaths(paths: string[], options?: { recursive?: boolean }) {
    this.log('addPaths', [paths, options]);
    const added = paths.map((p) => this.add(p.split('/').pop() ?? p, p));
    this.pushQueue();
    return added;
  }
  async addFile(name: string, bytes: Uint8Array) {
    this.log('addFile', [name, bytes.byteLength]);
    const item = this.add(name, `/tmp/fake/${name}`);
    this.pushQueue();
    return item;
  }
  async removeItem(id: string) {
    this.items = this.items.filter((i) => i.id !== id);
    this.pushQueue();
  }
  async clearFinished() {
    this.items = this.items.filter((i) => i.status === 'queued' || i.status === 'running');
    this.pushQueue();
  }
  async start() {
    this.log('start', []);
    const waiting = this.items.filter((i) => i.status === 'queued');
    if (this.settings.mode === 'cloud') {
      if (!this.apiKey) throw new Error('Cloud mode needs an API key: add one in Cloud settings.');
      if (waiting.length * this.creditsPerImage > this.balance) throw new Error('Insufficient credits: this batch needs more credits than the account has.');
    }
    this.running = true;
    this.runTotal = waiting.length;
    this.pushQueue();
  }
  /** Moves the first unfinished item forward by `percent` (finishing it at 100). */
  step(percent = 50) {
    const item = this.items.find((i) => i.status === 'running') ?? this.items.find((i) => i.status === 'queued');
    if (!item || !this.running) return;
    item.status = 'running';
    item.percent = Math.min(100, item.percent + percent);
    if (item.percent >= 100) this.finish(item);
    this.emit({ type: 'item', item: { ...item } });
    this.pushQueue();
    if (!this.items.some((i) => i.status === 'queued' || i.status === 'running')) this.endBatch();
  }
  finishAll() {
    while (this.running) this.step(100);
  }
  private finish(item: JobItem) {
    if (this.options.failNames?.test(item.inputName)) {
      item.status = 'failed';
      item.error = `${item.inputName} is not an image Crisp can read (the file is damaged or not JPG, PNG or WebP).`;
      return;
    }
    item.status = 'done';
    item.percent = 100;
    item.outputPath = `/tmp/fake/out/${item.inputName}`;
    item.outputDimensions = { width: 40, height: 32 };
    if (this.settings.mode === 'cloud') {
      item.creditsDeducted = this.creditsPerImage;
      this.balance -= this.creditsPerImage;
      this.emit({ type: 'account', account: this.account() });
    }
  }
  private endBatch() {
    this.running = false;
    const run = this.items.slice(-this.runTotal);
    this.pushQueue();
    this.emit({ type: 'batchFinished', done: run.filter((i) => i.status === 'done').length, failed: run.filter((i) => i.status === 'failed').length, total: this.runTotal });
  }
  async cancel(id?: string) {
    this.log('cancel', id === undefined ? [] : [id]);
    for (const i of this.items) if ((id === undefined || i.id === id) && (i.status === 'queued' || i.status === 'running')) Object.assign(i, { status: 'cancelled', percent: 0 });
    if (!this.items.some((i) => i.status === 'queued' || i.status === 'running') && this.running) this.endBatch();
    else this.pushQueue();
  }
  async retry(id?: string) {
    for (const i of this.items) if ((id === undefined || i.id === id) && (i.status === 'failed' || i.status === 'cancelled')) Object.assign(i, { status: 'queued', percent: 0, error: undefined });
    this.pushQueue();
  }
  async getQueue() {
    return this.snapshot();
  }
  async estimate() {
    const items = this.items.filter((i) => i.status === 'queued').length;
    return { mode: this.settings.mode, credits: this.settings.mode === 'cloud' ? items * this.creditsPerImage : 0, items };
  }
  private account(): AccountView {
    return { available: true, email: 'user@example.test', currentCredits: this.balance, currentExtraCredits: 0 };
  }
  async getAccount() {
    if (this.settings.mode !== 'cloud' || !this.apiKey) return { available: false };
    return this.account();
  }
  async readImage(id: string, which: 'input' | 'output') {
    this.log('readImage', [id, which]);
    if (!this.items.some((i) => i.id === id)) throw new Error('No such item.');
    return { mime: 'image/png', bytes: PNG_1x1 };
  }
  async revealOutput(id: string) {
    this.log('revealOutput', [id]);
    return false;
  }
  subscribe(listener: (event: ServiceEvent) => void) {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}
