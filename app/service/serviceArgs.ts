/**
 * One zod schema per CrispService method's argument list, and the single place where an untrusted call
 * (from Electron IPC or from `crisp ui`'s HTTP bridge) is checked and dispatched. Both transports call
 * `callServiceMethod`, so neither can forget a check and neither writes the schemas twice.
 * Enumerations come from the contract module; nothing here re-declares a model, scale or format.
 */
import { z } from 'zod';
import { CrispError, MODEL_NAMES } from '../../engine/contract/index.js';
import { FACE_MODELS } from '../../engine/core/index.js';
import { settingsPatchSchema as settingsPatch } from '../settings/settingsSchema.js';
import type { CrispService } from './crispService.js';
import { SERVICE_TABLE, type ServiceMethod } from './methodTable.js';

/** The catalog face restorers (GFPGAN) can be downloaded from the app as well. */
const FACE_MODEL_NAMES = FACE_MODELS.map((e) => e.name) as [string, ...string[]];

/** Generous bounds that still stop a hostile page from sending megabytes of "settings". */
const shortText = z.string().max(4096);
const itemId = z.string().min(1).max(200);
const presetName = z.string().min(1).max(200);

/**
 * A settings change: every field, range and choice comes from the one option declaration
 * (app/settings/upscaleOptions.ts via settingsSchema), the same check the settings store applies.
 */
export const settingsPatchSchema = settingsPatch;

/** Largest single file the UI may hand over as bytes (a drop, a paste, a browser file input). */
export const MAX_ADD_FILE_BYTES = 200 * 1024 * 1024;

const bytesSchema = z.instanceof(Uint8Array).refine((b) => b.byteLength <= MAX_ADD_FILE_BYTES, 'file is too large');

/** Every method's argument tuple. `satisfies` makes a method added to the table (methodTable.ts) a compile error here. */
export const SERVICE_ARGS = {
  getSettings: z.tuple([]),
  updateSettings: z.tuple([settingsPatchSchema]),
  setApiKey: z.tuple([z.string().max(1024).nullable()]),
  hasApiKey: z.tuple([]),
  listDevices: z.tuple([]),
  listPresets: z.tuple([]),
  choosePreset: z.tuple([presetName]),
  savePreset: z.tuple([presetName]),
  renamePreset: z.tuple([presetName, presetName]),
  deletePreset: z.tuple([presetName]),
  exportPresets: z.tuple([z.array(presetName).max(200).optional()]),
  // The file is validated whole by the store (a sentence naming the first problem); here only its size.
  importPresets: z.tuple([z.string().max(1024 * 1024)]),
  listWatches: z.tuple([]),
  addWatch: z.tuple([
    z
      .object({
        dir: shortText.min(1),
        preset: presetName,
        outDir: shortText.optional(),
        recursive: z.boolean().optional(),
        mode: z.enum(['local', 'cloud']).optional(),
      })
      .strict(),
  ]),
  removeWatch: z.tuple([itemId]),
  pauseWatch: z.tuple([itemId]),
  resumeWatch: z.tuple([itemId]),
  allowWatchSpending: z.tuple([itemId]),
  listModels: z.tuple([]),
  downloadModel: z.tuple([z.union([z.enum(MODEL_NAMES), z.enum(FACE_MODEL_NAMES)])]),
  importModel: z.tuple([z.string().min(1).max(1024), bytesSchema]),
  removeModel: z.tuple([z.string().regex(/^custom:[\w.-]{1,100}$/, 'only imported (custom:) models can be removed')]),
  openModelsFolder: z.tuple([]),
  cancelDownload: z.tuple([z.string().min(1).max(200)]),
  modelPreview: z.tuple([z.string().min(1).max(200), itemId.optional(), z.enum(['before', 'after']).optional()]),
  addPaths: z.tuple([
    z.array(shortText.min(1)).max(10_000),
    z.object({ recursive: z.boolean().optional() }).strict().optional(),
  ]),
  addFile: z.tuple([z.string().min(1).max(1024), bytesSchema]),
  removeItem: z.tuple([itemId]),
  clearFinished: z.tuple([z.strictObject({ discardUnsaved: z.boolean().optional() }).optional()]),
  start: z.tuple([]),
  cancel: z.tuple([itemId.optional()]),
  retry: z.tuple([itemId.optional()]),
  resume: z.tuple([]),
  getQueue: z.tuple([]),
  estimate: z.tuple([]),
  getAccount: z.tuple([]),
  readImage: z.tuple([itemId, z.enum(['input', 'output'])]),
  revealOutput: z.tuple([itemId]),
  openOutput: z.tuple([itemId]),
} satisfies Record<ServiceMethod, z.ZodType<unknown[]>>;

export function isServiceMethod(name: unknown): name is ServiceMethod {
  return typeof name === 'string' && Object.hasOwn(SERVICE_TABLE, name);
}

/** A call the transport refused before it reached the service (unknown method, bad arguments): catalog row bad-call. */
export class ServiceCallError extends CrispError {
  override readonly name = 'ServiceCallError';
  constructor(message: string) {
    super('bad-call', message, { params: { detail: message } });
  }
}

/** Trailing `undefined`s are dropped by JSON; optional tail elements make `[]` and `[undefined]` equal. */
export function parseServiceArgs(method: ServiceMethod, args: unknown): unknown[] {
  if (!Array.isArray(args)) throw new ServiceCallError(`${method}: arguments must be a list`);
  const parsed = SERVICE_ARGS[method].safeParse(args);
  if (!parsed.success)
    throw new ServiceCallError(
      `${method}: invalid arguments (${z.prettifyError(parsed.error).replace(/\s+/g, ' ').trim()})`,
    );
  return parsed.data as unknown[];
}

/** Validates then invokes. The service's own errors pass through unchanged (they are written for users). */
export async function callServiceMethod(service: CrispService, method: unknown, args: unknown): Promise<unknown> {
  if (!isServiceMethod(method))
    throw new ServiceCallError(`unknown method ${JSON.stringify(String(method)).slice(0, 80)}`);
  const checked = parseServiceArgs(method, args);
  const fn = service[method] as (...a: unknown[]) => Promise<unknown>;
  return fn.apply(service, checked);
}
