/**
 * A minimal protobuf wire-format reader and writer. ONNX only needs varints, 32-bit floats,
 * length-delimited fields and packed repeated scalars, so a hand-written codec avoids a .proto
 * schema at runtime and lets denoiseBlend patch tensor bytes in place by offset.
 */
import { CrispError } from '../../contract/errorCatalog.js';

export const WIRE_VARINT = 0;
export const WIRE_I64 = 1;
export const WIRE_LEN = 2;
export const WIRE_I32 = 5;

export interface ProtoField {
  field: number;
  wire: number;
  /** varint / fixed values as bigint (int64 safe); length-delimited payloads as a subarray view. */
  value: bigint | Uint8Array;
  /** Byte offset of the payload inside the buffer that was read (for in-place patching). */
  offset: number;
}

/** A catalog `bad-model-file` failure (engine/contract/errorCatalog.ts); the message says what and why. */
export class ProtoError extends CrispError {
  override readonly name = 'ProtoError';
  constructor(message: string) {
    super('bad-model-file', message);
  }
}

/** Reads all top-level fields of one message. Throws on truncated or malformed input. */
export function readFields(buf: Uint8Array): ProtoField[] {
  const out: ProtoField[] = [];
  let pos = 0;
  const view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  const varint = (): bigint => {
    let result = 0n;
    let shift = 0n;
    for (;;) {
      if (pos >= buf.length) throw new ProtoError('truncated varint');
      const b = buf[pos++]!;
      result |= BigInt(b & 0x7f) << shift;
      if ((b & 0x80) === 0) return result;
      shift += 7n;
      if (shift > 70n) throw new ProtoError('varint too long');
    }
  };
  while (pos < buf.length) {
    const key = Number(varint());
    const field = key >>> 3;
    const wire = key & 7;
    if (field === 0) throw new ProtoError('field number 0');
    switch (wire) {
      case WIRE_VARINT: {
        const offset = pos;
        out.push({ field, wire, value: varint(), offset });
        break;
      }
      case WIRE_I64: {
        if (pos + 8 > buf.length) throw new ProtoError('truncated fixed64');
        out.push({ field, wire, value: view.getBigUint64(pos, true), offset: pos });
        pos += 8;
        break;
      }
      case WIRE_I32: {
        if (pos + 4 > buf.length) throw new ProtoError('truncated fixed32');
        out.push({ field, wire, value: BigInt(view.getUint32(pos, true)), offset: pos });
        pos += 4;
        break;
      }
      case WIRE_LEN: {
        const len = Number(varint());
        if (pos + len > buf.length) throw new ProtoError(`length-delimited field ${field} runs past the end`);
        out.push({ field, wire, value: buf.subarray(pos, pos + len), offset: pos });
        pos += len;
        break;
      }
      default:
        throw new ProtoError(`unsupported wire type ${wire} for field ${field}`);
    }
  }
  return out;
}

export function fieldBytes(f: ProtoField): Uint8Array {
  if (!(f.value instanceof Uint8Array)) throw new ProtoError(`field ${f.field} is not length-delimited`);
  return f.value;
}

export function fieldInt(f: ProtoField): number {
  if (typeof f.value !== 'bigint') throw new ProtoError(`field ${f.field} is not a scalar`);
  return Number(BigInt.asIntN(64, f.value));
}

export function fieldString(f: ProtoField): string {
  return new TextDecoder().decode(fieldBytes(f));
}

export function fieldFloat(f: ProtoField): number {
  if (typeof f.value !== 'bigint' || f.wire !== WIRE_I32) throw new ProtoError(`field ${f.field} is not a float`);
  const dv = new DataView(new ArrayBuffer(4));
  dv.setUint32(0, Number(f.value), true);
  return dv.getFloat32(0, true);
}

/** Decodes a repeated int64 field that may be packed or unpacked. */
export function repeatedInts(fields: ProtoField[], field: number): number[] {
  const out: number[] = [];
  for (const f of fields) {
    if (f.field !== field) continue;
    if (f.wire === WIRE_LEN) {
      const inner = f.value as Uint8Array;
      let pos = 0;
      while (pos < inner.length) {
        let result = 0n;
        let shift = 0n;
        for (;;) {
          if (pos >= inner.length) throw new ProtoError('truncated packed varint');
          const b = inner[pos++]!;
          result |= BigInt(b & 0x7f) << shift;
          if ((b & 0x80) === 0) break;
          shift += 7n;
        }
        out.push(Number(BigInt.asIntN(64, result)));
      }
    } else out.push(fieldInt(f));
  }
  return out;
}

/** Growable buffer writer; nested messages are encoded separately and embedded as bytes. */
export class ProtoWriter {
  private chunks: Uint8Array[] = [];
  private size = 0;

  private push(b: Uint8Array): void {
    this.chunks.push(b);
    this.size += b.length;
  }

  private rawVarint(v: bigint): void {
    // Negative int64 values are encoded as their 64-bit two's complement (10 bytes), as protobuf does.
    let x = BigInt.asUintN(64, v);
    const bytes: number[] = [];
    do {
      let b = Number(x & 0x7fn);
      x >>= 7n;
      if (x !== 0n) b |= 0x80;
      bytes.push(b);
    } while (x !== 0n);
    this.push(Uint8Array.from(bytes));
  }

  private key(field: number, wire: number): void {
    this.rawVarint(BigInt((field << 3) | wire));
  }

  int(field: number, v: number | bigint): this {
    this.key(field, WIRE_VARINT);
    this.rawVarint(BigInt(v));
    return this;
  }

  float(field: number, v: number): this {
    this.key(field, WIRE_I32);
    const b = new Uint8Array(4);
    new DataView(b.buffer).setFloat32(0, v, true);
    this.push(b);
    return this;
  }

  bytes(field: number, b: Uint8Array): this {
    this.key(field, WIRE_LEN);
    this.rawVarint(BigInt(b.length));
    this.push(b);
    return this;
  }

  string(field: number, s: string): this {
    return this.bytes(field, new TextEncoder().encode(s));
  }

  message(field: number, w: ProtoWriter): this {
    return this.bytes(field, w.finish());
  }

  /** Re-emits a field read by readFields unchanged (graph surgery keeps what it does not understand). */
  field(f: ProtoField): this {
    this.key(f.field, f.wire);
    if (f.value instanceof Uint8Array) {
      this.rawVarint(BigInt(f.value.length));
      this.push(f.value);
    } else if (f.wire === WIRE_VARINT) this.rawVarint(f.value);
    else {
      const size = f.wire === WIRE_I64 ? 8 : 4;
      const b = new Uint8Array(size);
      const dv = new DataView(b.buffer);
      if (size === 8) dv.setBigUint64(0, f.value, true);
      else dv.setUint32(0, Number(f.value), true);
      this.push(b);
    }
    return this;
  }

  packedInts(field: number, values: readonly number[]): this {
    const inner = new ProtoWriter();
    for (const v of values) inner.rawVarint(BigInt(v));
    return this.bytes(field, inner.finish());
  }

  finish(): Uint8Array {
    const out = new Uint8Array(this.size);
    let pos = 0;
    for (const c of this.chunks) {
      out.set(c, pos);
      pos += c.length;
    }
    return out;
  }
}
