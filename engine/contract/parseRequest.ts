/**
 * The contract's requests, checked: each parser runs the request's zod schema (schemas.ts) and turns the first
 * issue into the contract's refusal — "Bad Request: <field> <what is wrong>" — so every transport (the
 * in-process engine API, the HTTP server, the app's worker) refuses a request in the same words. What a field
 * accepts is said once, in requestFields(); a `custom` issue of a schema carries its own words.
 */
import type { z } from 'zod';
import { INPUT_MIME_TYPES, MODEL_NAMES, OUTPUT_FORMATS, COMPRESSION_MAX, COMPRESSION_MIN } from './enums.js';
import { CrispError, ERROR_CATALOG, isErrorCode } from './errorCatalog.js';
import { errors } from './errors.js';
import { sanitizeFileName } from './fileNames.js';
import {
  completeMultipartUploadRequestSchema,
  getTaskStatusRequestSchema,
  MAX_TASK_ID_LENGTH,
  getUploadUrlRequestSchemaFor,
  startTaskSourceSchema,
  taskSettingsSchema,
  type ContractIssueParams,
  type TaskSettingsOptions,
} from './schemas.js';
import type {
  CompleteMultipartUploadRequest,
  GetTaskStatusRequest,
  GetUploadUrlRequest,
  SourceFile,
  StartTaskRequest,
  TaskSettings,
} from './shapes.js';

/** How a refusal names a field's problem: when it is missing, and when its value is not accepted. */
interface FieldWords {
  required: string;
  /** `{value}`: the value sent, quoted. */
  invalid: string;
}
const accepts = (what: string, required = `is required (${what})`): FieldWords => ({
  required,
  invalid: `{value} is not ${what}`,
});

function describe(values: readonly (string | number)[]): string {
  return values.map((v) => (typeof v === 'string' ? `'${v}'` : String(v))).join(', ');
}

/** What each request field accepts, in the contract's words. */
function requestFields(options: TaskSettingsOptions): Readonly<Record<string, FieldWords>> {
  const custom = options.extraModels ? ' or an imported custom:<name> model' : '';
  return {
    model: accepts(`one of ${describe(MODEL_NAMES)}${custom}`),
    scale: accepts('an integer from 1 to 8'),
    saveImageAs: accepts(`one of ${describe(OUTPUT_FORMATS)}`),
    compression: accepts(`an integer from ${COMPRESSION_MIN} to ${COMPRESSION_MAX}`),
    enhanceFace: accepts('true or false'),
    denoise: accepts('a number from 0 to 1'),
    'files[]': { required: '', invalid: 'must be a FileData object with a path from complete-multipart-upload' },
    'urls[]': { required: '', invalid: '{value} is not an http(s) URL' },
    fileSize: { required: 'is required (the size of the file in bytes)', invalid: '{value} is not a positive integer' },
    fileType: accepts(`one of ${describe(INPUT_MIME_TYPES)}`),
    originalFileName: { required: 'is required', invalid: 'is required' },
    taskId: { required: 'is required', invalid: 'is required' },
  };
}

export function showValue(v: unknown): string {
  // eslint-disable-next-line no-control-regex
  const quoted = (t: string) => (/[\u0000-\u001f]/.test(t) ? JSON.stringify(t) : `'${t}'`);
  const s = typeof v === 'string' ? quoted(v) : JSON.stringify(v);
  return s === undefined ? String(v) : s.length > 60 ? `${s.slice(0, 57)}...` : s;
}

/** The value a client sent at `path`, reading into JSON arrays sent as form strings. */
function sentAt(raw: unknown, path: readonly PropertyKey[], emptyIsAbsent: boolean): unknown {
  let cur = raw;
  for (const key of path) {
    if (typeof cur === 'string') {
      try {
        cur = JSON.parse(cur) as unknown;
      } catch {
        return undefined;
      }
    }
    if (cur === null || typeof cur !== 'object') return undefined;
    cur = (cur as Record<PropertyKey, unknown>)[key];
  }
  return cur === null || (emptyIsAbsent && cur === '') ? undefined : cur;
}

/** The field a path names: `model`, or `urls[2]` for an item of a list. */
function fieldOf(path: readonly PropertyKey[]): { key: string; label: string; depth: number } | undefined {
  const [name, index] = path;
  if (typeof name !== 'string') return undefined;
  if (typeof index === 'number') return { key: `${name}[]`, label: `${name}[${index}]`, depth: 2 };
  return { key: name, label: name, depth: 1 };
}

/** How a request is read: its fields' words, and whether an empty value is an absent one (form fields). */
interface RequestWords {
  fields: Readonly<Record<string, FieldWords>>;
  emptyIsAbsent: boolean;
}

/** The first issue of a failed parse as the contract's refusal. */
function refusal(issue: z.core.$ZodIssue, raw: unknown, words: RequestWords): CrispError {
  const field = fieldOf(issue.path);
  const value = field ? sentAt(raw, issue.path.slice(0, field.depth), words.emptyIsAbsent) : raw;
  const fill = (text: string) => text.replace('{value}', () => showValue(value));
  const params = issue.code === 'custom' ? (issue.params as ContractIssueParams | undefined) : undefined;
  if (params?.contract) {
    // A refusal the schema wrote itself.
    const text = fill(issue.message);
    const detail = params.whole || !field ? text : `${field.label} ${text}`;
    const code = isErrorCode(params.code) ? params.code : 'bad-request';
    const row = ERROR_CATALOG[code].message;
    return new CrispError(
      code,
      row.replace('{detail}', detail),
      row.includes('{detail}') ? { params: { detail } } : {},
    );
  }
  const fieldWords = field ? words.fields[field.key] : undefined;
  // A field without words of its own (complete-multipart-upload's parts) is named by path, in zod's words.
  if (!field || !fieldWords) return errors.badRequest(`${issue.path.join('.') || 'body'}: ${issue.message}`);
  return errors.badRequest(`${field.label} ${fill(value === undefined ? fieldWords.required : fieldWords.invalid)}`);
}

/** Runs a schema over `raw`; its first issue is thrown as the contract's refusal. */
function parseWith<T extends z.ZodType>(schema: T, raw: unknown, words: RequestWords): z.output<T> {
  const r = schema.safeParse(raw);
  if (r.success) return r.data;
  throw refusal(firstIssue(r.error.issues), raw, words);
}

/** A union's issue stands for its branches: the most specific one (a written refusal first) speaks. */
function firstIssue(issues: readonly z.core.$ZodIssue[]): z.core.$ZodIssue {
  const first = issues[0]!;
  if (first.code !== 'invalid_union') return first;
  const branches = first.errors.flat();
  const written = branches.find((i) => i.code === 'custom' && (i.params as ContractIssueParams | undefined)?.contract);
  return written ? { ...written, path: [...first.path, ...written.path] } : first;
}

export function parseTaskSettings(fields: Record<string, unknown>, options: TaskSettingsOptions = {}): TaskSettings {
  return parseWith(taskSettingsSchema(options), fields, { fields: requestFields(options), emptyIsAbsent: true });
}

export interface StartTaskLimits {
  maxFilesPerTask: number;
}

/**
 * start-task: settings plus exactly one of `file` (direct parts, one or more), `files` (uploaded FileData)
 * or `urls`. `file` is what the transport collected from the `file` and `<index>.file` parts.
 */
export function parseStartTask(
  fields: Record<string, unknown>,
  file: SourceFile[] | undefined,
  limits: StartTaskLimits,
  options: TaskSettingsOptions = {},
): StartTaskRequest {
  const words = { fields: requestFields(options), emptyIsAbsent: true };
  const settings = parseWith(taskSettingsSchema(options), fields, words);
  const source = parseWith(
    startTaskSourceSchema(limits.maxFilesPerTask),
    { file, files: fields.files, urls: fields.urls },
    words,
  );
  return { ...settings, ...source };
}

/** Unwraps the spec's `{ "data": … }` request envelope. */
export function unwrapData(body: unknown): Record<string, unknown> | undefined {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return undefined;
  const data = (body as Record<string, unknown>).data;
  if (typeof data !== 'object' || data === null || Array.isArray(data)) return undefined;
  return data as Record<string, unknown>;
}

/** The JSON endpoints' bodies: an empty string is a value there. */
const JSON_WORDS: RequestWords = { fields: requestFields({}), emptyIsAbsent: false };

export interface UploadLimits {
  maxFileSize: number;
}

export function parseGetUploadUrl(body: unknown, limits: UploadLimits): GetUploadUrlRequest {
  const data = unwrapData(body);
  if (!data) throw errors.badRequest('the body must be {"data": {"fileSize", "fileType", "originalFileName"}}');
  const req = parseWith(getUploadUrlRequestSchemaFor(limits.maxFileSize), data, JSON_WORDS);
  return { ...req, originalFileName: sanitizeFileName(req.originalFileName) };
}

export function parseCompleteMultipartUpload(body: unknown): CompleteMultipartUploadRequest {
  const data = unwrapData(body);
  if (!data || data.uploadId === undefined || data.key === undefined || data.parts === undefined) {
    throw errors.missingParameters();
  }
  return parseWith(completeMultipartUploadRequestSchema, data, { fields: {}, emptyIsAbsent: false });
}

/**
 * The schema's answers for taskIds it accepted, by the taskId as sent. get-task-status is polled in a loop
 * with the same body, so a repeat poll costs a Map look-up instead of a zod run. The run is not the main
 * cost: in a long-running server V8 allocates zod's per-parse objects straight into the old generation
 * (their allocation sites also built the schemas at start, objects that live forever), so every poll left
 * ~0.4 KB there and a poll loop paid a major GC every few seconds (docs/benchmarks.md, issue 40).
 * The answer depends on the taskId string alone (the schema keeps no other field), so it is the schema's own
 * answer; only acceptances are kept, of ids no longer than the schema accepts; the oldest goes first.
 */
const acceptedTaskIds = new Map<string, GetTaskStatusRequest>();
const ACCEPTED_TASK_IDS_MAX = 4096;

export function parseGetTaskStatus(body: unknown): GetTaskStatusRequest {
  const data = unwrapData(body);
  const sent = data?.taskId;
  if (typeof sent === 'string') {
    const known = acceptedTaskIds.get(sent);
    if (known) return known;
  }
  const req = parseWith(getTaskStatusRequestSchema, data ?? {}, JSON_WORDS);
  if (typeof sent === 'string' && sent.length <= MAX_TASK_ID_LENGTH) {
    if (acceptedTaskIds.size >= ACCEPTED_TASK_IDS_MAX) acceptedTaskIds.delete(acceptedTaskIds.keys().next().value!);
    // Frozen: every poll of the id shares this object.
    acceptedTaskIds.set(sent, Object.freeze(req));
  }
  return req;
}
