/**
 * A flat RGB PNG of any size in a few megabytes: the first row says the colour, every later row is filter "Up"
 * of it (all zero bytes), deflated as a stream, so nothing near width × height × 3 bytes is ever held. The
 * audit's "small file that holds everyone" (issue 40) is such an image at 20000×20000 (about 1.2 MB).
 */
import zlib from 'node:zlib';

export async function flatPng(
  width: number,
  height: number,
  rgb: readonly [number, number, number] = [90, 140, 200],
): Promise<Buffer> {
  const chunk = (type: string, data: Buffer) => {
    const head = Buffer.alloc(8);
    head.writeUInt32BE(data.length, 0);
    head.write(type, 4, 'latin1');
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(zlib.crc32(Buffer.concat([head.subarray(4), data])), 0);
    return Buffer.concat([head, data, crc]);
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr.set([8, 2, 0, 0, 0], 8);
  const first = Buffer.alloc(1 + width * 3);
  for (let x = 0; x < width; x++) first.set(rgb, 1 + x * 3);
  const up = Buffer.alloc(1 + width * 3);
  up[0] = 2;
  const deflate = zlib.createDeflate({ level: 1 });
  const parts: Buffer[] = [];
  deflate.on('data', (c: Buffer) => parts.push(c));
  const ended = new Promise((resolve) => deflate.on('end', resolve));
  deflate.write(first);
  for (let y = 1; y < height; y++) if (!deflate.write(up)) await new Promise((r) => deflate.once('drain', r));
  deflate.end();
  await ended;
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', ihdr),
    chunk('IDAT', Buffer.concat(parts)),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}
