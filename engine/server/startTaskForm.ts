/**
 * Reads start-task's multipart/form-data into the engine's StartTaskInput without interpreting it:
 * text fields go to `fields` as strings (model, scale, saveImageAs, enhanceFace, compression, and the
 * JSON-array strings `files` and `urls`), the `file` part and `<index>.file` parts (ordered: `file`
 * first, then by index) become SourceFiles. All validation of the task happens in the contract's
 * parseStartTask; this module only bounds what a body can cost the server:
 *
 * - **pay before you load**: before the bytes of each file part are read, `gate.beforeFile` checks the
 *   caller can afford that many images (at least one), so a caller without credit costs one header;
 * - file parts **stream to disk** (`incomingDir/<n>`), never into memory, and the first bytes are sniffed
 *   so a non-image is refused at once; file bytes of the whole request are capped (`maxRequestBytes`);
 * - a body that is not well-formed multipart (truncated, no boundary, bad part headers) is a 400.
 * The caller owns `incomingDir` and removes it when the task has taken (moved) the files, or on refusal.
 */
import { createWriteStream } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { FastifyRequest } from 'fastify';
import type { StartTaskInput } from '../service/api.js';
import { errors, isContractError, type SourceFile } from '../contract/index.js';
import { sniffImageType } from '../core/pipeline/imageSniff.js';

export interface FormLimits {
  maxFileSize: number;
  maxFilesPerTask: number;
  maxFieldBytes: number;
  /** Largest sum of file-part bytes in one request. */
  maxRequestBytes: number;
}

export interface FormGate {
  /** Called before the bytes of the `fileCount`-th file part are read; throws (402) to refuse. */
  beforeFile(fileCount: number, fields: Readonly<Record<string, string>>): Promise<void>;
}

const INDEXED_FILE = /^(\d{1,4})\.file$/;
const TEXT_AS_FILE = new Set(['files', 'urls']);
const MAX_FIELDS = 32;
/** File parts beyond the task limit that are still counted (not stored) so the refusal can name the count. */
const EXTRA_FILES_COUNTED = 100;
/** Enough bytes to tell JPG, PNG and WEBP apart (WEBP needs 12). */
const SNIFF_BYTES = 12;

const mib = (n: number) => `${Math.round(n / 1048576)} MiB`;

/** Streams one file part to `target`, sniffing its first bytes and counting against the request's cap. */
async function streamPart(
  stream: Readable,
  target: string,
  name: string,
  budget: { left: number; max: number },
): Promise<void> {
  let head = Buffer.alloc(0);
  let sniffed = false;
  const check = async function* (chunks: AsyncIterable<Buffer>) {
    for await (const chunk of chunks) {
      budget.left -= chunk.length;
      if (budget.left < 0)
        throw errors.payloadTooLarge(
          `the files of this request exceed ${mib(budget.max)} in total; send fewer or smaller files`,
        );
      if (!sniffed) {
        head = Buffer.concat([head, chunk]);
        if (head.length >= SNIFF_BYTES) {
          if (!sniffImageType(head)) throw errors.badRequest(`${name} is not a JPG, PNG or WEBP image`);
          sniffed = true;
        }
      }
      yield chunk;
    }
    if (!sniffed && head.length > 0 && !sniffImageType(head))
      throw errors.badRequest(`${name} is not a JPG, PNG or WEBP image`);
  };
  await pipeline(stream, check, createWriteStream(target, { mode: 0o600 }));
}

/** Reads a text part sent as a file (some clients send the JSON arrays as Blobs), bounded like a field. */
async function readTextPart(stream: Readable, name: string, maxBytes: number): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const c of stream as AsyncIterable<Buffer>) {
    size += c.length;
    if (size > maxBytes) throw errors.payloadTooLarge(`field '${name}' exceeds ${maxBytes} bytes`);
    chunks.push(c);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** Errors from the multipart parser itself (busboy) carry no code; ours and the file system's do. */
function asFormError(e: unknown): unknown {
  if (isContractError(e)) return e;
  const code = (e as { code?: unknown } | null)?.code;
  // The parser ends a file part's stream early when the body stops inside it (truncated upload).
  const premature = code === 'ERR_STREAM_PREMATURE_CLOSE';
  if (typeof code === 'string' && !premature) return e;
  const first = premature
    ? 'a file part ends before its boundary'
    : ((e instanceof Error ? e.message : String(e)).split('\n')[0]?.slice(0, 120) ?? '');
  return errors.badRequest(
    `the multipart/form-data body is malformed or ends early (${first}); send the whole form again`,
  );
}

/** What start-task accepts, named in the refusal of anything else. */
export const START_TASK_TYPES =
  'start-task takes multipart/form-data (or application/x-www-form-urlencoded when it sends no file)';

export const URL_ENCODED = 'application/x-www-form-urlencoded';

/**
 * extension (docs/api.md#start-task): the url-encoded form a client sends for a task without files, e.g.
 * Python's `requests.post(url, data={..., "urls": json.dumps([...])})`. Read like the multipart form's text
 * fields: each field once, at most MAX_FIELDS of them (the body is already bounded by the parser's limit).
 */
export function parseUrlEncodedForm(body: string): Record<string, string> {
  const entries = new Map<string, string>();
  for (const [k, v] of new URLSearchParams(body)) {
    if (entries.has(k)) throw errors.badRequest(`field '${k.slice(0, 40)}' is sent twice`);
    if (entries.size >= MAX_FIELDS) throw errors.badRequest('too many form fields');
    entries.set(k, v);
  }
  // fromEntries defines own properties, so a `__proto__` field is a field like any other.
  return Object.fromEntries(entries);
}

export async function readStartTaskForm(
  request: FastifyRequest,
  limits: FormLimits,
  incomingDir: string,
  gate: FormGate,
): Promise<StartTaskInput> {
  if (request.headers['content-type']?.toLowerCase().startsWith(URL_ENCODED)) {
    return { fields: request.body as Record<string, string> };
  }
  if (!request.isMultipart()) throw errors.badRequest(START_TASK_TYPES);
  const fields: Record<string, string> = {};
  const files: { order: number; file: SourceFile }[] = [];
  const budget = { left: limits.maxRequestBytes, max: limits.maxRequestBytes };
  let stored = 0;
  try {
    const parts = request.parts({
      limits: {
        fileSize: limits.maxFileSize,
        // Above the task limit so parseStartTask (not busboy) counts and words the "too many files" refusal.
        files: limits.maxFilesPerTask + EXTRA_FILES_COUNTED,
        fields: MAX_FIELDS,
        fieldSize: limits.maxFieldBytes,
      },
    });
    for await (const part of parts) {
      if (part.type === 'file') {
        const name = part.fieldname;
        const m = INDEXED_FILE.exec(name);
        if (name !== 'file' && !m && !TEXT_AS_FILE.has(name)) {
          part.file.resume();
          throw errors.badRequest(
            `unexpected file part '${name.slice(0, 40)}': send file, <index>.file, files or urls`,
          );
        }
        if (TEXT_AS_FILE.has(name)) {
          if (Object.hasOwn(fields, name)) throw errors.badRequest(`field '${name}' is sent twice`);
          fields[name] = await readTextPart(part.file, name, limits.maxFieldBytes);
          continue;
        }
        const originalFileName = part.filename || 'image';
        if (files.length >= limits.maxFilesPerTask) {
          // Over the limit: parseStartTask refuses the task by count, so the bytes are never stored, but
          // they still count against the request's byte cap.
          for await (const c of part.file as AsyncIterable<Buffer>) {
            budget.left -= c.length;
            if (budget.left < 0)
              throw errors.payloadTooLarge(
                `the files of this request exceed ${mib(budget.max)} in total; send fewer or smaller files`,
              );
          }
          files.push({ order: m ? Number(m[1]) : -1, file: { originalFileName, data: new Uint8Array(0) } });
          continue;
        }
        await gate.beforeFile(files.length + 1, fields);
        if (stored === 0) await mkdir(incomingDir, { recursive: true, mode: 0o700 });
        const target = path.join(incomingDir, String(stored++));
        await streamPart(part.file, target, originalFileName, budget);
        if (part.file.truncated)
          throw errors.payloadTooLarge(`${originalFileName} is larger than the limit of ${mib(limits.maxFileSize)}`);
        files.push({ order: m ? Number(m[1]) : -1, file: { originalFileName, data: { path: target } } });
      } else {
        if (part.valueTruncated)
          throw errors.payloadTooLarge(`field '${part.fieldname}' exceeds ${limits.maxFieldBytes} bytes`);
        if (Object.hasOwn(fields, part.fieldname))
          throw errors.badRequest(`field '${part.fieldname.slice(0, 40)}' is sent twice`);
        fields[part.fieldname] = typeof part.value === 'string' ? part.value : String(part.value);
      }
    }
  } catch (e) {
    throw asFormError(e);
  }
  files.sort((a, b) => a.order - b.order);
  return files.length > 0 ? { fields, file: files.map((f) => f.file), moveFiles: true } : { fields };
}
