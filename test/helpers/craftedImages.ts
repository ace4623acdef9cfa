/** Hand-made image files for refusal tests: valid headers that lie about the content. */
import { crc32, deflateSync } from 'node:zlib';

function chunk(type: string, data: Buffer): Buffer {
  const len = Buffer.alloc(4);
  len.writeUInt32BE(data.length);
  const body = Buffer.concat([Buffer.from(type, 'latin1'), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(body));
  return Buffer.concat([len, body, crc]);
}

/** A valid PNG header that claims width × height, with one tiny (wrong-sized) IDAT. */
export function hugePng(width: number, height: number): Buffer {
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr.writeUInt8(8, 8); // bit depth
  ihdr.writeUInt8(2, 9); // RGB
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', ihdr),
    chunk('IDAT', deflateSync(Buffer.alloc(16))),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}

/**
 * The same PNG grown to `bytes` with a private ancillary chunk before IEND (decoders skip it): a file as large
 * as a photo's with the pixels of a thumbnail, so upload tests move real bytes without an expensive upscale.
 */
export function paddedPng(png: Buffer, bytes: number): Buffer {
  const iend = png.length - 12;
  const pad = Math.max(0, bytes - png.length - 12);
  return Buffer.concat([png.subarray(0, iend), chunk('paDd', Buffer.alloc(pad, 0x5a)), png.subarray(iend)]);
}
