/**
 * The app layer's service interface: everything the UI may ask of the main process. The Electron
 * preload and `crisp ui`'s HTTP bridge are two transports of exactly this interface (VS Code's
 * ProxyChannel idea): the renderer only ever sees a `CrispService`, never a channel name.
 * Pure types: safe to import from renderer/ (no Node, no Electron).
 */
import type { SizeRequest } from '../../engine/contract/index.js';
import type { Precision } from '../../engine/core/index.js';
import type { Language, Mode, Settings, Theme } from '../settings/settingsSchema.js';
import type { Preset } from '../settings/presets.js';
import type { NewWatch, WatchView } from '../watch/watchTypes.js';
import type { ExecutionProviderSetting, OverwritePolicy } from '../settings/upscaleOptions.js';

/** The local engine's device for one image: provider, precision and why (`--json` device, Engine settings). */
export interface DeviceUsed {
  /** The execution provider: cpu, webgpu, cuda, dml or coreml. */
  provider: string;
  precision: Precision;
  /** Why it ran there: auto's choice for the job's size, a fallback, or the provider asked for (one sentence). */
  reason?: string;
}

/** Settings and their parts are derived from the one option declaration (app/settings/upscaleOptions.ts). */
export type { ExecutionProviderSetting, Language, Mode, NewWatch, OverwritePolicy, Preset, Settings, Theme, WatchView };

export interface ModelInfo {
  name: string;
  title: string;
  description: string;
  /** 'face': a face restorer for "Enhance faces", never an upscaling model. */
  kind: 'photo' | 'illustration' | 'denoise' | 'custom' | 'face';
  /** Native scale of the network. */
  scale: number;
  /** Local mode: weights present. Cloud mode: always true for contract models. */
  installed: boolean;
  licence: string;
  /** Bytes a download fetches (catalog models not installed yet); null or absent when unknown. */
  downloadSize?: number | null;
  /** True when downloadSize is an estimate ("about N MB"), not the verified byte count. */
  downloadSizeApprox?: boolean;
}

/** The settings one item ran with, as its row shows them. */
export interface ItemSettings {
  mode: Mode;
  model: string;
  scale: number;
  passes: 1 | 2;
  /** service-lite-4x's denoise strength, where it applied. */
  denoise?: number;
  face: boolean;
  format: 'png' | 'jpg' | 'webp';
  /** An exact output size asked for instead of the scale (engine/contract/geometry.ts). */
  size?: SizeRequest;
}

export type ItemStatus = 'queued' | 'running' | 'done' | 'failed' | 'cancelled' | 'skipped';

export interface JobItem {
  id: string;
  /** Absolute path of the input (or of the copy kept for pasted/dropped bytes). */
  inputPath: string;
  inputName: string;
  status: ItemStatus;
  /** 0–100 for this item. */
  percent: number;
  /** While running on the local engine: estimated seconds left for this item. */
  etaSeconds?: number;
  /** Plain-words error for a failed item. */
  error?: string;
  /** Stable name of the failure (app/jobs/userErrors.ts ERROR_CODES), for scripts and remedies. */
  errorCode?: string;
  /**
   * What the failure's sentence was made of (CrispError params: `name`, `detail`…), as core or the app raised
   * it: the renderer words the failure from errorCode + these in the person's language.
   */
  errorParams?: Record<string, string>;
  outputPath?: string;
  /** Bytes written for a done item. */
  fileSize?: number;
  /** Notices from the engine or service about a done item (e.g. a provider fallback). */
  warnings?: string[];
  inputDimensions?: { width: number; height: number };
  outputDimensions?: { width: number; height: number };
  /** Cloud: credits deducted for this item. */
  creditsDeducted?: number;
  /** With face enhancement: faces found and enhanced in this image, where the engine or service reports them. */
  faces?: { found: number; enhanced: number };
  /** What made this row's result (set when it starts running, kept with the row): the row says it. */
  madeWith?: ItemSettings;
  /** How long the run of this item took, in ms (done items; persisted, so it survives a reload). */
  durationMs?: number;
  /** Local engine: the device that ran the model and its precision (Engine settings shows the latest). */
  device?: DeviceUsed;
  /** Browser UI: the result was downloaded at least once. */
  downloaded?: boolean;
  /**
   * Set on snapshots only: a done result that exists only in the app's data folder and was never downloaded,
   * so clearing its row would delete it (Clear finished asks first).
   */
  unsaved?: boolean;
  /**
   * Set on snapshots and item events only: the input is a copy Crisp keeps in its data folder (a pasted, dropped
   * or uploaded file), so its path, and an output beside it, are internal and not shown.
   */
  dropped?: boolean;
}

export interface QueueSnapshot {
  items: JobItem[];
  /** Finished items (done, failed, cancelled, skipped) of the current run. */
  finished: number;
  total: number;
  /** Whole-batch percent; never goes backwards while a run is active. */
  percent: number;
  running: boolean;
}

export interface CreditEstimate {
  mode: Mode;
  /** Local: 0 ("local upscaling is free"). Cloud: from the service or the documented price table. */
  credits: number;
  items: number;
  /**
   * Of these waiting images, how many the engine would refuse as too large with these settings (their output
   * over the pixel limit or the format's side limit; app/jobs/outputFits.ts); absent: none known.
   */
  tooLarge?: number;
}

export interface AccountView {
  /** false when the server has no get-account (the balance is then simply not shown). */
  available: boolean;
  email?: string;
  currentCredits?: number;
  currentExtraCredits?: number;
}

/** Progress of a `downloadModel` call; `total` is null while the size is unknown. */
export interface ModelDownloadEvent {
  type: 'modelDownload';
  name: string;
  received: number;
  total: number | null;
  state: 'downloading' | 'installed' | 'failed' | 'cancelled';
  /** Plain-words reason, with state 'failed'. */
  error?: string;
}

export type ServiceEvent =
  | { type: 'queue'; queue: QueueSnapshot }
  | { type: 'item'; item: JobItem }
  | { type: 'account'; account: AccountView }
  | { type: 'settings'; settings: Settings }
  /** A watched folder was added, removed, paused or resumed, or its counts changed. */
  | { type: 'watches'; watches: WatchView[] }
  | { type: 'batchFinished'; done: number; failed: number; total: number }
  | ModelDownloadEvent
  /** The installed or imported models changed (a download finished, a custom model was imported or removed): re-read listModels. */
  | { type: 'modelsChanged' };

export interface CrispService {
  getSettings(): Promise<Settings>;
  /** Validated in the main process; answers the stored settings. */
  updateSettings(patch: Partial<Omit<Settings, 'version'>>): Promise<Settings>;
  /** Stored through the secret store, never in the settings file. null clears it. */
  setApiKey(key: string | null): Promise<void>;
  hasApiKey(): Promise<boolean>;
  /**
   * The execution providers the local engine can use on this computer, best first (the order Automatic tries;
   * cpu last). Asked of the engine process (started if needed), the only one that loads onnxruntime.
   */
  listDevices(): Promise<string[]>;
  /** Built-in presets first, then the user's; `chosen` is the one last chosen (the default of `crisp FILE…`). */
  listPresets(): Promise<{ presets: Preset[]; chosen: string }>;
  /** Writes the preset's options into the settings and makes it the chosen one; answers the settings. */
  choosePreset(name: string): Promise<Settings>;
  /** A new preset from the current settings' preset fields. */
  savePreset(name: string): Promise<Preset>;
  /** User presets only (built-ins cannot be renamed or deleted). */
  renamePreset(from: string, to: string): Promise<Preset>;
  deletePreset(name: string): Promise<void>;
  /** The export file's text (the user's presets, or the named ones). */
  exportPresets(names?: string[]): Promise<string>;
  /** Adds the presets of an export file's text, validated whole; answers the presets added. */
  importPresets(text: string): Promise<Preset[]>;
  /** Watched folders, with their preset, outputs folder, paused or not, and counts (done, failed, pending). */
  listWatches(): Promise<WatchView[]>;
  /** Starts watching a folder (a full path) with a preset; every image arriving there is upscaled once. */
  addWatch(req: NewWatch): Promise<WatchView>;
  removeWatch(id: string): Promise<void>;
  pauseWatch(id: string): Promise<WatchView>;
  resumeWatch(id: string): Promise<WatchView>;
  /** A Cloud folder: allows it to spend credits (asked once, before its first image is sent). */
  allowWatchSpending(id: string): Promise<WatchView>;
  listModels(): Promise<ModelInfo[]>;
  /**
   * Local mode: downloads, converts and installs a catalog model into the user's models folder, emitting
   * `modelDownload` events; answers the installed model. A second call for a model already downloading
   * joins the first. Refused in Cloud mode (the service has every model).
   */
  downloadModel(name: string): Promise<ModelInfo>;
  /**
   * Imports a model file (.pth, .safetensors, .ckpt, .onnx) as a custom model: converted, smoke-tested and
   * installed in the user's models folder; answers it as `custom:<name>`.
   */
  importModel(fileName: string, bytes: Uint8Array): Promise<ModelInfo>;
  /**
   * Local mode: what an installed model makes of the same small sample crop (PNG, ×4), so models can be
   * compared before choosing. Made once per model and kept in the data folder.
   */
  /**
   * What `name` makes of a crop: the built-in sample, or — with `itemId` — the centre of that queued image
   * (64 px, so the ×4 preview is 256 px). `which: 'before'` answers that crop itself, for the side-by-side.
   */
  /** Stops a running download (its partial file is kept, so downloading again resumes it). */
  cancelDownload(name: string): Promise<void>;
  modelPreview(name: string, itemId?: string, which?: 'before' | 'after'): Promise<{ mime: string; bytes: Uint8Array }>;
  /** Removes an imported (`custom:`) model; a saved choice of it falls back to the default model. */
  removeModel(name: string): Promise<void>;
  /** Desktop only: opens the custom models folder in the file manager (the browser UI reports false). */
  openModelsFolder(): Promise<boolean>;
  /** Files and folders (folders expanded, optionally recursively, keeping only supported images). */
  addPaths(paths: string[], options?: { recursive?: boolean }): Promise<JobItem[]>;
  /** Bytes from a drop, a paste or a browser file input. */
  addFile(name: string, bytes: Uint8Array): Promise<JobItem>;
  removeItem(id: string): Promise<void>;
  /**
   * Removes done and skipped rows (failed and stopped ones stay). Rows whose result exists only in the data
   * folder and was never downloaded stay too, unless `discardUnsaved` (the person confirmed deleting them).
   */
  clearFinished(options?: { discardUnsaved?: boolean }): Promise<{ removed: number; keptUnsaved: number }>;
  start(): Promise<void>;
  /** One item, or everything when id is absent. */
  cancel(id?: string): Promise<void>;
  /** Failed and stopped items: one, or all when id is absent ("Retry all"); starts a run when none is active. */
  retry(id?: string): Promise<void>;
  /** After Stop: queues the stopped items again (failed ones stay failed) and starts. */
  resume(): Promise<void>;
  getQueue(): Promise<QueueSnapshot>;
  estimate(): Promise<CreditEstimate>;
  getAccount(): Promise<AccountView>;
  /** Image bytes for thumbnails and the before/after comparison. */
  readImage(id: string, which: 'input' | 'output'): Promise<{ mime: string; bytes: Uint8Array }>;
  /** Desktop only: show the output in the file manager (the browser UI reports false). */
  revealOutput(id: string): Promise<boolean>;
  /** Desktop only: open the output in the system's image viewer (the browser UI reports false). */
  openOutput(id: string): Promise<boolean>;
  subscribe(listener: (event: ServiceEvent) => void): () => void;
}
