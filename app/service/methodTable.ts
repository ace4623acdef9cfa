/**
 * The method table: every CrispService method, the subject module that implements it and how it travels
 * over a wire. It is the one list the transports (Electron IPC + preload, the `crisp ui` bridge and the
 * renderer's HTTP client), the argument schemas (app/service/serviceArgs.ts), the subject modules and the
 * renderer's test double are generated from or checked against. `satisfies` makes it exhaustive: a method
 * added to CrispService and missing here (or listed here and missing there) is a compile error.
 * Pure data and types: safe for renderer/.
 */
import type { CrispService } from './crispService.js';

/** The subject modules under app/service/ (one file each). */
export type Subject = 'settings' | 'presets' | 'watch' | 'models' | 'queue' | 'results' | 'credits';

/**
 * json: arguments and result as JSON. bytesIn: (name, bytes) with raw bytes (addFile, importModel). bytesOut: the
 * result is `{ mime, bytes }` sent as the body itself (readImage, modelPreview). Transports that cannot carry bytes as
 * JSON use this instead of special-casing method names.
 */
export type Wire = 'json' | 'bytesIn' | 'bytesOut';

export interface MethodSpec {
  readonly subject: Subject;
  readonly wire: Wire;
}

type MethodName = Exclude<keyof CrispService, 'subscribe'>;

export const SERVICE_TABLE = {
  getSettings: { subject: 'settings', wire: 'json' },
  updateSettings: { subject: 'settings', wire: 'json' },
  setApiKey: { subject: 'settings', wire: 'json' },
  hasApiKey: { subject: 'settings', wire: 'json' },
  listDevices: { subject: 'settings', wire: 'json' },
  listPresets: { subject: 'presets', wire: 'json' },
  choosePreset: { subject: 'presets', wire: 'json' },
  savePreset: { subject: 'presets', wire: 'json' },
  renamePreset: { subject: 'presets', wire: 'json' },
  deletePreset: { subject: 'presets', wire: 'json' },
  exportPresets: { subject: 'presets', wire: 'json' },
  importPresets: { subject: 'presets', wire: 'json' },
  listWatches: { subject: 'watch', wire: 'json' },
  addWatch: { subject: 'watch', wire: 'json' },
  removeWatch: { subject: 'watch', wire: 'json' },
  pauseWatch: { subject: 'watch', wire: 'json' },
  resumeWatch: { subject: 'watch', wire: 'json' },
  allowWatchSpending: { subject: 'watch', wire: 'json' },
  listModels: { subject: 'models', wire: 'json' },
  downloadModel: { subject: 'models', wire: 'json' },
  importModel: { subject: 'models', wire: 'bytesIn' },
  removeModel: { subject: 'models', wire: 'json' },
  cancelDownload: { subject: 'models', wire: 'json' },
  modelPreview: { subject: 'models', wire: 'bytesOut' },
  openModelsFolder: { subject: 'models', wire: 'json' },
  addPaths: { subject: 'queue', wire: 'json' },
  addFile: { subject: 'queue', wire: 'bytesIn' },
  removeItem: { subject: 'queue', wire: 'json' },
  clearFinished: { subject: 'queue', wire: 'json' },
  start: { subject: 'queue', wire: 'json' },
  cancel: { subject: 'queue', wire: 'json' },
  retry: { subject: 'queue', wire: 'json' },
  resume: { subject: 'queue', wire: 'json' },
  getQueue: { subject: 'queue', wire: 'json' },
  readImage: { subject: 'results', wire: 'bytesOut' },
  revealOutput: { subject: 'results', wire: 'json' },
  openOutput: { subject: 'results', wire: 'json' },
  estimate: { subject: 'credits', wire: 'json' },
  getAccount: { subject: 'credits', wire: 'json' },
} as const satisfies Record<MethodName, MethodSpec>;

export type ServiceMethod = keyof typeof SERVICE_TABLE;

/** Every method name, in table order. */
export const SERVICE_METHODS = Object.keys(SERVICE_TABLE) as ServiceMethod[];

/** The methods one subject module implements. */
export type SubjectMethod<S extends Subject> = {
  [K in ServiceMethod]: (typeof SERVICE_TABLE)[K]['subject'] extends S ? K : never;
}[ServiceMethod];

/** What one subject module returns: exactly its slice of CrispService. */
export type SubjectService<S extends Subject> = Pick<CrispService, SubjectMethod<S>>;

/** The methods carried with a given wire form. */
export const methodsWithWire = (wire: Wire): ServiceMethod[] =>
  SERVICE_METHODS.filter((m) => SERVICE_TABLE[m].wire === wire);
