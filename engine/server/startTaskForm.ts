/**
 * Reads start-task's multipart/form-data into the engine's StartTaskInput without interpreting it:
 * text fields go to `fields` as strings (model, scale, saveImageAs, enhanceFace, compression, and the
 * JSON-array strings `files` and `urls`), the `file` part and `<index>.file` parts (ordered: `file`
 * first, then by index) become SourceFiles. All validation happens in the contract's parseStartTask.
 */
import type { FastifyRequest } from 'fastify';
import type { StartTaskInput } from '../api.js';
import { errors, type SourceFile } from '../contract/index.js';

export interface FormLimits {
  maxFileSize: number;
  maxFilesPerTask: number;
  maxFieldBytes: number;
}

const INDEXED_FILE = /^(\d{1,4})\.file$/;
const TEXT_AS_FILE = new Set(['files', 'urls']);
const MAX_FIELDS = 32;
/** File parts beyond the task limit that are still counted (not stored) so the refusal can name the count. */
const EXTRA_FILES_COUNTED = 100;

export async function readStartTaskForm(request: FastifyRequest, limits: FormLimits): Promise<StartTaskInput> {
  if (!request.isMultipart()) throw errors.badRequest('start-task takes multipart/form-data');
  const fields: Record<string, string> = {};
  const files: { order: number; file: SourceFile }[] = [];
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
        throw errors.badRequest(`unexpected file part '${name.slice(0, 40)}': send file, <index>.file, files or urls`);
      }
      if (!TEXT_AS_FILE.has(name) && files.length >= limits.maxFilesPerTask) {
        // Over the limit: parseStartTask refuses the task by count, so the bytes are never needed.
        part.file.resume();
        files.push({ order: m ? Number(m[1]) : -1, file: { originalFileName: part.filename || 'image', data: new Uint8Array(0) } });
        continue;
      }
      const buf = await part.toBuffer();
      if (part.file.truncated) throw errors.payloadTooLarge(`file part '${name}' exceeds the limit of ${limits.maxFileSize} bytes`);
      if (TEXT_AS_FILE.has(name)) {
        // Some clients send the JSON arrays as Blob parts; treat them like the text field.
        fields[name] = buf.toString('utf8');
        continue;
      }
      files.push({
        order: m ? Number(m[1]) : -1,
        file: { originalFileName: part.filename || 'image', data: new Uint8Array(buf.buffer, buf.byteOffset, buf.byteLength) },
      });
    } else {
      if (part.valueTruncated) throw errors.payloadTooLarge(`field '${part.fieldname}' exceeds ${limits.maxFieldBytes} bytes`);
      if (Object.hasOwn(fields, part.fieldname)) throw errors.badRequest(`field '${part.fieldname.slice(0, 40)}' is sent twice`);
      fields[part.fieldname] = typeof part.value === 'string' ? part.value : String(part.value);
    }
  }
  files.sort((a, b) => a.order - b.order);
  return files.length > 0 ? { fields, file: files.map((f) => f.file) } : { fields };
}
