/**
 * Failures in the person's language. The app layer classifies every failure with a stable code of the
 * error catalog (engine/contract/errorCatalog.ts ErrorCode), sent beside the English message over both transports (the
 * `code` of a rejected call, an item's `errorCode`). Service-side failures are always worded from the
 * catalog: a service's own text can carry its paths, commands or jargon ("Unauthorized"). File failures
 * keep the app's English sentence in English (it names the user's path) and use the catalog otherwise.
 * Anything unclassified, and refusals the app itself wrote (bad-request, usage), keep their message; a
 * service's own bad-request (the contract's "Bad Request: …") is worded from the catalog too.
 * Failures of this computer's engine (a damaged image, a model not installed, the disk budget…) arrive with
 * the code core raised and the parts of its sentence (JobItem.errorParams, carried by core's error wire):
 * another language words them from those; English keeps the engine's own sentence, which names sizes and
 * folders. None of them is worded as the service's: a local failure never suggests Local mode.
 */
import type { JobItem } from '../../../app/service/crispService.js';
import type { ErrorCode } from '../../../engine/contract/errorCatalog.js';
import type { MessageKey } from './catalog.js';
import type { Params, Translator } from './index.js';

/** Keyed by the catalog's codes, so a code renamed or removed there is a compile error here. */
const SERVICE: Readonly<Partial<Record<ErrorCode, MessageKey>>> = {
  unauthorized: 'error.unauthorized',
  forbidden: 'error.forbidden',
  'insufficient-credits': 'error.insufficientCredits',
  'rate-limited': 'error.rateLimited',
  'server-error': 'error.serverError',
  'storage-unavailable': 'error.storageUnavailable',
  'too-large': 'error.tooLarge',
  'invalid-output': 'error.invalidOutput',
  'processing-failed': 'error.processingFailed',
  'connection-refused': 'error.connectionRefused',
  'connection-reset': 'error.connectionReset',
  'host-not-found': 'error.hostNotFound',
  'timed-out': 'error.timedOut',
  network: 'error.network',
  'engine-crashed': 'error.engineCrashed',
};

const FILE: Readonly<Partial<Record<ErrorCode, MessageKey>>> = {
  'not-found': 'error.notFound',
  'permission-denied': 'error.permissionDenied',
  'is-a-folder': 'error.isAFolder',
  'not-a-folder': 'error.notAFolder',
  'read-only': 'error.readOnly',
  'disk-full': 'error.diskFull',
  'too-many-open-files': 'error.tooManyOpenFiles',
  'name-too-long': 'error.nameTooLong',
  busy: 'error.busy',
  'not-an-image': 'error.notAnImage',
  'unknown-model': 'error.unknownModel',
};

/**
 * The local engine's failures. `paramsOnly`: every part comes from the error's params (its `name` is a model
 * or a provider, never the image's name). A sentence with a part left unfilled is not shown: the message is.
 */
const LOCAL: Readonly<Partial<Record<ErrorCode, { key: MessageKey; paramsOnly?: true }>>> = {
  'damaged-image': { key: 'error.damagedImage' },
  'unusable-image': { key: 'error.unusableImage' },
  'not-enough-space': { key: 'error.notEnoughSpace' },
  'model-not-installed': { key: 'error.modelNotInstalled', paramsOnly: true },
  'face-model-missing': { key: 'error.faceModelMissing' },
  'bad-model-file': { key: 'error.badModelFile' },
  'unsafe-model-file': { key: 'error.badModelFile' },
  'unsupported-architecture': { key: 'error.badModelFile' },
  'provider-unavailable': { key: 'error.providerUnavailable', paramsOnly: true },
  'upscale-failed': { key: 'error.upscaleFailed' },
};

const UNFILLED = /\{\w+\}/;

/** The contract's form of every 400 a service answers ("Bad Request: Missing User", …). */
const SERVICE_REFUSAL = /^Bad Request\b/;

/** The code a rejected service call carried (see renderer/src/service/httpService.ts and the preload). */
export function codeOf(e: unknown): string | undefined {
  const code = e && typeof e === 'object' ? (e as { code?: unknown }).code : undefined;
  return typeof code === 'string' ? code : undefined;
}

/**
 * The sentence for a failure with this code; `message` when the code has none in this language. `name`: the
 * file it is about; `params`: what the error's sentence was made of (JobItem.errorParams).
 */
export function errorText(
  code: string | undefined,
  message: string,
  tr: Translator,
  name = '',
  params: Params = {},
): string {
  if (!code) return message;
  const local = LOCAL[code as ErrorCode];
  if (local) {
    if (tr.locale === 'en') return message;
    const text = tr.t(local.key, local.paramsOnly ? params : { ...(name ? { name } : {}), ...params });
    return UNFILLED.test(text) ? message : text;
  }
  const service = SERVICE[code as ErrorCode];
  if (service) return tr.t(service, { name });
  // A service's 400 comes in the contract's "Bad Request: …" form (its detail may name server paths or
  // commands); the app's own refusals with this code are sentences written for the person and stay.
  if (code === 'bad-request' && SERVICE_REFUSAL.test(message)) return tr.t('error.badRequest', { name });
  const file = FILE[code as ErrorCode];
  if (file && name && tr.locale !== 'en') return tr.t(file, { name });
  return message;
}

export function itemErrorText(
  item: Pick<JobItem, 'error' | 'errorCode' | 'errorParams' | 'inputName'>,
  tr: Translator,
): string {
  return errorText(item.errorCode, item.error ?? '', tr, item.inputName, item.errorParams);
}

/** Which field of the Cloud card a failed connection test is about (its message is shown beside it). */
export function connectionField(code: string | undefined): 'url' | 'key' | null {
  if (code === 'unauthorized' || code === 'forbidden') return 'key';
  if (
    code === 'connection-refused' ||
    code === 'connection-reset' ||
    code === 'host-not-found' ||
    code === 'timed-out' ||
    code === 'network' ||
    code === 'not-found'
  )
    return 'url';
  return null;
}
