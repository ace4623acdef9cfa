/**
 * Probes an image when it is added, so a broken file is flagged in the queue before any work: the
 * header gives the dimensions (sharp reads only the header), and a cheap structural check catches the
 * common damage — a PNG cut short or with corrupted chunks (every chunk's CRC is checked, IEND must be
 * there), a JPEG without its end marker, a WebP shorter than its RIFF header says. Decoding every pixel
 * here would cost as much as the upscale's own read; this costs one pass over the bytes.
 */
import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { crc32 } from 'node:zlib';
import sharp from 'sharp';
import { catalogMessage, type ErrorCode, type ErrorParams } from '../../engine/contract/index.js';
import { sniffImageType } from '../../engine/core/index.js';
import { ioError } from './userErrors.js';

/** A broken file: the sentence, and its catalog code and params (what the renderer translates). */
export interface ProbeProblem {
  ok: false;
  problem: string;
  code: ErrorCode;
  params: ErrorParams;
}

export type ProbeResult = { ok: true; width: number; height: number } | ProbeProblem;

/** Files above this size skip the structural check (reading them whole here would double the I/O). */
const CHECK_LIMIT_BYTES = 256 * 1024 * 1024;

export async function probeImage(file: string): Promise<ProbeResult> {
  const name = path.basename(file);
  const damaged = (detail: string): ProbeResult => ({
    ok: false,
    problem: catalogMessage('damaged-image', { name, detail }),
    code: 'damaged-image',
    params: { name, detail },
  });
  // The structural check first: it names the damage precisely, where a decoder only says "unreadable".
  try {
    if ((await stat(file)).size <= CHECK_LIMIT_BYTES) {
      const problem = structuralProblem(await readFile(file));
      if (problem) return damaged(problem);
    }
  } catch (e) {
    return {
      ok: false,
      problem: `${name} cannot be read: check that the file is still there and readable.`,
      code: ioError(e, { path: name })?.code ?? 'not-found',
      params: { name },
    };
  }
  let width: number | undefined;
  let height: number | undefined;
  try {
    ({ width, height } = await sharp(file, { limitInputPixels: false }).metadata());
  } catch {
    return damaged('its header cannot be read');
  }
  if (!width || !height) return damaged('it has no dimensions');
  return { ok: true, width, height };
}

export function structuralProblem(bytes: Buffer): string | undefined {
  switch (sniffImageType(bytes.subarray(0, 16))) {
    case 'image/png':
      return pngProblem(bytes);
    case 'image/jpeg':
      // The end-of-image marker; some writers leave padding after it, so the tail is searched.
      return bytes.subarray(Math.max(0, bytes.length - 4096)).includes(Buffer.from([0xff, 0xd9]))
        ? undefined
        : 'the JPEG data is cut short';
    case 'image/webp':
      return bytes.length >= bytes.readUInt32LE(4) + 8 ? undefined : 'the WebP data is cut short';
    default:
      return 'it is not a JPG, PNG or WebP image';
  }
}

function pngProblem(bytes: Buffer): string | undefined {
  let at = 8;
  while (at + 12 <= bytes.length) {
    const length = bytes.readUInt32BE(at);
    const end = at + 12 + length;
    if (end > bytes.length) return 'the PNG data is cut short';
    const typeAndData = bytes.subarray(at + 4, at + 8 + length);
    if (crc32(typeAndData) !== bytes.readUInt32BE(at + 8 + length)) return 'a PNG chunk is corrupted';
    if (typeAndData.toString('latin1', 0, 4) === 'IEND') return undefined;
    at = end;
  }
  return 'the PNG data is cut short';
}
