import { describe, expect, it } from 'vitest';
import {
  errors,
  isContractError,
  type ContractError,
  formatProgress,
  MODEL_NAMES,
  OUTPUT_FORMATS,
  sanitizeFileName,
  SCALES,
  SPEC_ERRORS,
  TASK_STATUSES,
} from '../../engine/contract/index.js';
import {
  parseCompleteMultipartUpload,
  parseGetTaskStatus,
  parseGetUploadUrl,
  parseStartTask,
} from '../../engine/contract/parseRequest.js';

const limits = { maxFilesPerTask: 3 };
const base = { model: 'digital-art-4x', scale: '4', saveImageAs: 'png', enhanceFace: 'false' };
const file = { originalFileName: 'a.png', data: new Uint8Array([1]) };

function refusal(fn: () => unknown): ContractError {
  try {
    fn();
  } catch (e) {
    if (isContractError(e)) return e;
    throw e;
  }
  throw new Error('expected a ContractError');
}

describe('contract enums', () => {
  it('has the spec values exactly', () => {
    expect(MODEL_NAMES).toHaveLength(12);
    expect(new Set(MODEL_NAMES).size).toBe(12);
    expect(SCALES).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    expect(OUTPUT_FORMATS).toEqual(['jpg', 'png', 'webp']);
    expect([...TASK_STATUSES].sort()).toEqual(['ENHANCING', 'PROCESSED', 'PROCESSING', 'PROCESSING_FAILED']);
  });

  it('error catalog reproduces the spec table', () => {
    expect(SPEC_ERRORS).toHaveLength(11);
    expect(errors.missingUser()).toMatchObject({ status: 400, message: 'Bad Request: Missing User' });
    expect(errors.missingUserId()).toMatchObject({ status: 400, message: 'Bad Request: Missing User ID' });
    expect(errors.userNotFound()).toMatchObject({ status: 404, message: 'User not found' });
    expect(errors.insufficientCredits()).toMatchObject({ status: 402, message: 'Insufficient credits' });
    expect(errors.taskNotFound()).toMatchObject({ status: 404, message: 'Task not found' });
    for (const row of SPEC_ERRORS.filter((r) => r.status === 500)) {
      expect(errors.serverFailure(row.endpoint)).toMatchObject({ status: 500, message: row.message });
    }
  });
});

describe('start-task validation', () => {
  it('accepts form strings and typed values alike', () => {
    const a = parseStartTask(base, [file], limits);
    const b = parseStartTask(
      { model: 'digital-art-4x', scale: 4, saveImageAs: 'png', enhanceFace: false },
      [file],
      limits,
    );
    expect(a).toEqual(b);
    expect(a).toMatchObject({ source: 'file', scale: 4, compression: 0, enhanceFace: false });
    expect(parseStartTask({ ...base, saveImageAs: 'JPEG', compression: '35' }, [file], limits)).toMatchObject({
      saveImageAs: 'jpg',
      compression: 35,
    });
  });

  it.each([
    [{ ...base, scale: '0' }, "Bad Request: scale '0' is not an integer from 1 to 8"],
    [{ ...base, scale: '2.5' }, "Bad Request: scale '2.5' is not an integer from 1 to 8"],
    [{ ...base, compression: '101' }, "Bad Request: compression '101' is not an integer from 0 to 100"],
    [{ ...base, enhanceFace: 'maybe' }, "Bad Request: enhanceFace 'maybe' is not true or false"],
    [{ ...base, model: undefined }, /^Bad Request: model is required \(one of 'service-standard-4x'/],
  ])('refuses %j', (fields, message) => {
    const e = refusal(() => parseStartTask(fields, [file], limits));
    expect(e.status).toBe(400);
    if (typeof message === 'string') expect(e.message).toBe(message);
    else expect(e.message).toMatch(message);
  });

  it('parses files and urls from JSON form fields and enforces the per-task limit', () => {
    expect(parseStartTask({ ...base, files: '[{"path":"uploads/x/y.png"}]' }, undefined, limits)).toMatchObject({
      source: 'files',
      files: [{ path: 'uploads/x/y.png' }],
    });
    expect(parseStartTask({ ...base, urls: '["https://example.com/a b.png"]' }, undefined, limits)).toMatchObject({
      source: 'urls',
      urls: ['https://example.com/a%20b.png'],
    });
    expect(refusal(() => parseStartTask({ ...base, urls: '["file:///etc/passwd"]' }, undefined, limits)).message).toBe(
      "Bad Request: urls[0] 'file:///etc/passwd' is not an http(s) URL",
    );
    expect(refusal(() => parseStartTask({ ...base, files: 'not json' }, undefined, limits)).message).toBe(
      'Bad Request: files must be a JSON array',
    );
    expect(refusal(() => parseStartTask(base, [file, file, file, file], limits)).message).toBe(
      'Bad Request: 4 files in one task; the limit is 3',
    );
  });

  it('treats client file names as data, never paths', () => {
    expect(sanitizeFileName('../../etc/passwd')).toBe('passwd');
    expect(sanitizeFileName('C:\\Users\\me\\photo.png')).toBe('photo.png');
    expect(sanitizeFileName('..')).toBe('image');
    expect(sanitizeFileName('a\u0000b.png')).toBe('ab.png');
  });
});

describe('JSON endpoint validation', () => {
  it('get-upload-url', () => {
    expect(
      parseGetUploadUrl(
        { data: { fileSize: 10, fileType: 'image/png', originalFileName: 'x.png' } },
        { maxFileSize: 100 },
      ),
    ).toEqual({
      fileSize: 10,
      fileType: 'image/png',
      originalFileName: 'x.png',
    });
    expect(
      refusal(() =>
        parseGetUploadUrl(
          { data: { fileSize: 10, fileType: 'image/gif', originalFileName: 'x' } },
          { maxFileSize: 100 },
        ),
      ).message,
    ).toBe("Bad Request: fileType 'image/gif' is not one of 'image/jpeg', 'image/png', 'image/webp'");
    expect(
      refusal(() =>
        parseGetUploadUrl(
          { data: { fileSize: 1000, fileType: 'image/png', originalFileName: 'x' } },
          { maxFileSize: 100 },
        ),
      ).status,
    ).toBe(413);
  });

  it('complete-multipart-upload answers the spec message for missing parameters', () => {
    expect(refusal(() => parseCompleteMultipartUpload({ data: { uploadId: 'u' } })).message).toBe(
      'Bad Request: Missing required parameters',
    );
    expect(refusal(() => parseCompleteMultipartUpload({})).message).toBe('Bad Request: Missing required parameters');
  });

  it('get-task-status needs a taskId', () => {
    expect(parseGetTaskStatus({ data: { taskId: 'abc' } })).toEqual({ taskId: 'abc' });
    expect(refusal(() => parseGetTaskStatus({ data: {} })).message).toBe('Bad Request: taskId is required');
  });

  it('get-task-status remembers the schema’s answer for an accepted taskId, and only that', () => {
    const id = '7f1d2c3b-4a5e-4f60-8a7b-9c0d1e2f3a4b';
    const first = parseGetTaskStatus({ data: { taskId: id } });
    expect(first).toEqual({ taskId: id });
    // A repeat poll gets the same (frozen) answer, whatever else the body holds: the schema keeps only taskId.
    const again = parseGetTaskStatus({ data: { taskId: id, extra: 1 } });
    expect(again).toBe(first);
    expect(Object.isFrozen(again)).toBe(true);
    // The key is the taskId as sent: a spelling with spaces is the schema's (trimmed) answer, remembered too.
    const spaced = parseGetTaskStatus({ data: { taskId: `  ${id} ` } });
    expect(spaced).toEqual({ taskId: id });
    expect(parseGetTaskStatus({ data: { taskId: `  ${id} ` } })).toBe(spaced);
    // Refusals are never remembered: each one is the schema's refusal, the same every time.
    for (let i = 0; i < 2; i++) {
      expect(refusal(() => parseGetTaskStatus({ data: { taskId: '' } })).message).toBe(
        refusal(() => parseGetTaskStatus({ data: {} })).message,
      );
      expect(refusal(() => parseGetTaskStatus({ data: { taskId: 'x'.repeat(201) } })).code).toBe('task-not-found');
      expect(refusal(() => parseGetTaskStatus({ data: { taskId: 42 } })).message).toBe(
        'Bad Request: taskId is required',
      );
    }
  });

  it('progress strings', () => {
    expect(formatProgress(0)).toBe('0%');
    expect(formatProgress(0.999)).toBe('99%');
    expect(formatProgress(1)).toBe('100%');
    expect(formatProgress(2)).toBe('100%');
  });
});
