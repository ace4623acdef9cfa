/**
 * A minimal ZIP writer for "Download all": entries are stored, not deflated (upscaled PNG, JPEG and WebP
 * are already compressed, and storing keeps the work proportional to a copy). No ZIP64: an archive that
 * would pass 4 GiB or 65 535 entries is refused with words instead of written wrong.
 */
import { crc32 } from 'node:zlib';

export interface ZipEntry {
  name: string;
  bytes: Uint8Array;
}

const LIMIT = 0xffffffff;

/** Unique entry names: a second `photo_x4.png` becomes `photo_x4 (2).png`. */
export function uniqueNames(names: string[]): string[] {
  const seen = new Set<string>();
  return names.map((name) => {
    let candidate = name;
    const dot = name.lastIndexOf('.');
    const [stem, ext] = dot > 0 ? [name.slice(0, dot), name.slice(dot)] : [name, ''];
    for (let n = 2; seen.has(candidate.toLowerCase()); n++) candidate = `${stem} (${n})${ext}`;
    seen.add(candidate.toLowerCase());
    return candidate;
  });
}

export function zipArchive(entries: ZipEntry[]): Buffer {
  if (entries.length > 0xffff)
    throw new Error('Too many results for one zip (65 535 at most): download them in smaller groups.');
  const locals: Buffer[] = [];
  const centrals: Buffer[] = [];
  let offset = 0;
  for (const entry of entries) {
    const name = Buffer.from(entry.name, 'utf8');
    const size = entry.bytes.byteLength;
    const crc = crc32(entry.bytes);
    const local = Buffer.alloc(30 + name.length);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(20, 4); // version needed
    local.writeUInt16LE(0x0800, 6); // UTF-8 names
    local.writeUInt16LE(0, 8); // stored
    local.writeUInt32LE(0x00210000, 10); // DOS time/date: 1980-01-01 (deterministic archives)
    local.writeUInt32LE(crc, 14);
    local.writeUInt32LE(size, 18);
    local.writeUInt32LE(size, 22);
    local.writeUInt16LE(name.length, 26);
    name.copy(local, 30);
    const central = Buffer.alloc(46 + name.length);
    central.writeUInt32LE(0x02014b50, 0);
    central.writeUInt16LE(20, 4);
    central.writeUInt16LE(20, 6);
    central.writeUInt16LE(0x0800, 8);
    central.writeUInt16LE(0, 10);
    central.writeUInt32LE(0x00210000, 12);
    central.writeUInt32LE(crc, 16);
    central.writeUInt32LE(size, 20);
    central.writeUInt32LE(size, 24);
    central.writeUInt16LE(name.length, 28);
    central.writeUInt32LE(offset, 42);
    name.copy(central, 46);
    locals.push(local, Buffer.from(entry.bytes.buffer, entry.bytes.byteOffset, size));
    centrals.push(central);
    offset += local.length + size;
    if (offset > LIMIT)
      throw new Error('These results add up to more than 4 GiB: download them one by one or in smaller groups.');
  }
  const centralSize = centrals.reduce((a, c) => a + c.length, 0);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(entries.length, 8);
  end.writeUInt16LE(entries.length, 10);
  end.writeUInt32LE(centralSize, 12);
  end.writeUInt32LE(offset, 16);
  return Buffer.concat([...locals, ...centrals, end]);
}
