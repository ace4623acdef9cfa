/**
 * Minimal writers for the checkpoint formats the converter reads, so tests can build state dicts
 * without Python: a protocol-2 pickle of {"params": OrderedDict(name → tensor)} exactly as torch.save
 * lays it out, wrapped in a torch zip archive or the legacy stream format, and .safetensors.
 */
import { crc32 } from 'node:zlib';

export interface TestTensor {
  shape: number[];
  data: Float32Array;
}
export type TestStateDict = Map<string, TestTensor>;

class Bytes {
  private parts: Buffer[] = [];
  op(code: number): this {
    this.parts.push(Buffer.from([code]));
    return this;
  }
  raw(b: Buffer | Uint8Array): this {
    this.parts.push(Buffer.from(b));
    return this;
  }
  str(s: string): this {
    const b = Buffer.from(s, 'utf8');
    const len = Buffer.alloc(4);
    len.writeUInt32LE(b.length);
    return this.op(0x58).raw(len).raw(b); // BINUNICODE
  }
  int(n: number): this {
    const b = Buffer.alloc(4);
    b.writeInt32LE(n);
    return this.op(0x4a).raw(b); // BININT
  }
  global(module: string, name: string): this {
    return this.op(0x63).raw(Buffer.from(`${module}\n${name}\n`, 'latin1'));
  }
  tuple(ints: number[]): this {
    this.op(0x28);
    for (const i of ints) this.int(i);
    return this.op(0x74);
  }
  finish(): Buffer {
    return Buffer.concat(this.parts);
  }
}

/** Pickles {wrapper: OrderedDict(...)} with storages as persistent ids; keys are "0", "1", .... */
export function pickleStateDict(
  dict: TestStateDict,
  opts: { wrapper?: string | null; legacyPid?: boolean } = {},
): { pickle: Buffer; storages: Array<[string, Float32Array]> } {
  const p = new Bytes().op(0x80).op(2);
  const wrapper = opts.wrapper === undefined ? 'params' : opts.wrapper;
  if (wrapper) p.op(0x7d).str(wrapper);
  p.global('collections', 'OrderedDict').op(0x29).op(0x52).op(0x28);
  const storages: Array<[string, Float32Array]> = [];
  for (const [name, t] of dict) {
    const key = String(storages.length);
    storages.push([key, t.data]);
    const stride: number[] = [];
    let acc = 1;
    for (let d = t.shape.length - 1; d >= 0; d--) {
      stride.unshift(acc);
      acc *= t.shape[d]!;
    }
    p.str(name).global('torch._utils', '_rebuild_tensor_v2').op(0x28);
    p.op(0x28).str('storage').global('torch', 'FloatStorage').str(key).str('cpu').int(t.data.length);
    if (opts.legacyPid) p.op(0x4e); // legacy pids carry view metadata (None)
    p.op(0x74).op(0x51); // TUPLE, BINPERSID
    p.int(0)
      .tuple(t.shape)
      .tuple(stride)
      .op(0x89)
      .global('collections', 'OrderedDict')
      .op(0x29)
      .op(0x52)
      .op(0x74)
      .op(0x52);
  }
  p.op(0x75); // SETITEMS
  if (wrapper) p.op(0x73); // SETITEM
  p.op(0x2e);
  return { pickle: p.finish(), storages };
}

/** A STORED zip archive (what torch.save writes), with correct CRCs. */
export function zipArchive(files: Array<[string, Buffer]>): Buffer {
  const locals: Buffer[] = [];
  const central: Buffer[] = [];
  let offset = 0;
  for (const [name, data] of files) {
    const nameB = Buffer.from(name, 'utf8');
    const crc = crc32(data);
    const lh = Buffer.alloc(30);
    lh.writeUInt32LE(0x04034b50, 0);
    lh.writeUInt16LE(20, 4);
    lh.writeUInt16LE(0, 6);
    lh.writeUInt16LE(0, 8);
    lh.writeUInt32LE(0, 10);
    lh.writeUInt32LE(crc, 14);
    lh.writeUInt32LE(data.length, 18);
    lh.writeUInt32LE(data.length, 22);
    lh.writeUInt16LE(nameB.length, 26);
    lh.writeUInt16LE(0, 28);
    locals.push(lh, nameB, data);
    const ch = Buffer.alloc(46);
    ch.writeUInt32LE(0x02014b50, 0);
    ch.writeUInt16LE(20, 4);
    ch.writeUInt16LE(20, 6);
    ch.writeUInt32LE(crc, 16);
    ch.writeUInt32LE(data.length, 20);
    ch.writeUInt32LE(data.length, 24);
    ch.writeUInt16LE(nameB.length, 28);
    ch.writeUInt32LE(offset, 42);
    central.push(ch, nameB);
    offset += 30 + nameB.length + data.length;
  }
  const cd = Buffer.concat(central);
  const eocd = Buffer.alloc(22);
  eocd.writeUInt32LE(0x06054b50, 0);
  eocd.writeUInt16LE(files.length, 8);
  eocd.writeUInt16LE(files.length, 10);
  eocd.writeUInt32LE(cd.length, 12);
  eocd.writeUInt32LE(offset, 16);
  return Buffer.concat([...locals, cd, eocd]);
}

const f32 = (a: Float32Array): Buffer => Buffer.from(a.buffer, a.byteOffset, a.byteLength);

/** torch.save(obj) in the zip format. */
export function writePthZip(dict: TestStateDict, opts: { wrapper?: string | null } = {}): Buffer {
  const { pickle, storages } = pickleStateDict(dict, opts);
  return zipArchive([
    ['archive/data.pkl', pickle],
    ['archive/version', Buffer.from('3\n')],
    ...storages.map(([k, d]): [string, Buffer] => [`archive/data/${k}`, f32(d)]),
  ]);
}

/** A zip checkpoint whose data.pkl is the given raw pickle (for malicious-pickle tests). */
export function writePthZipWithPickle(pickle: Buffer): Buffer {
  return zipArchive([
    ['archive/data.pkl', pickle],
    ['archive/version', Buffer.from('3\n')],
  ]);
}

/** torch.save(obj, _use_new_zipfile_serialization=False). */
export function writePthLegacy(dict: TestStateDict): Buffer {
  const magic = new Bytes()
    .op(0x80)
    .op(2)
    .op(0x8a)
    .op(10)
    .raw(Buffer.from([0x6c, 0xfc, 0x9c, 0x46, 0xf9, 0x20, 0x6a, 0xa8, 0x50, 0x19]))
    .op(0x2e)
    .finish();
  const proto = new Bytes().op(0x80).op(2).int(1001).op(0x2e).finish();
  const sysInfo = new Bytes().op(0x80).op(2).op(0x7d).op(0x2e).finish();
  const { pickle, storages } = pickleStateDict(dict, { legacyPid: true });
  const keys = new Bytes().op(0x80).op(2).op(0x28);
  for (const [k] of storages) keys.str(k);
  keys.op(0x6c).op(0x2e); // LIST
  const blobs = storages.flatMap(([, d]) => {
    const n = Buffer.alloc(8);
    n.writeBigInt64LE(BigInt(d.length));
    return [n, f32(d)];
  });
  return Buffer.concat([magic, proto, sysInfo, pickle, keys.finish(), ...blobs]);
}

export function writeSafetensors(dict: TestStateDict): Buffer {
  const header: Record<string, unknown> = { __metadata__: { format: 'pt' } };
  let offset = 0;
  for (const [name, t] of dict) {
    header[name] = { dtype: 'F32', shape: t.shape, data_offsets: [offset, offset + t.data.byteLength] };
    offset += t.data.byteLength;
  }
  let json = JSON.stringify(header);
  while ((8 + json.length) % 8 !== 0) json += ' ';
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(Buffer.byteLength(json)));
  return Buffer.concat([len, Buffer.from(json), ...[...dict.values()].map((t) => f32(t.data))]);
}
