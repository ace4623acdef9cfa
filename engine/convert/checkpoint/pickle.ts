/**
 * A pickle *parser* for PyTorch checkpoints. It never executes anything: GLOBAL/STACK_GLOBAL only
 * resolve names on a short allow-list of the callables torch uses to rebuild tensors and ordered
 * dicts, and REDUCE only "calls" those by building plain data. Any other global (os.system,
 * builtins.eval, a model class pickled whole...) is refused with an error naming it, because a
 * checkpoint downloaded from the internet is untrusted input.
 */
import { CrispError } from '../../contract/errorCatalog.js';

/** A catalog `unsafe-model-file` failure (engine/contract/errorCatalog.ts); the message says what and why. */
export class UnsafePickleError extends CrispError {
  override readonly name = 'UnsafePickleError';
  constructor(message: string) {
    super('unsafe-model-file', message);
  }
}
/** A catalog `bad-model-file` failure (engine/contract/errorCatalog.ts); the message says what and why. */
export class PickleFormatError extends CrispError {
  override readonly name = 'PickleFormatError';
  constructor(message: string) {
    super('bad-model-file', message);
  }
}

export type StorageDtype =
  'float32' | 'float16' | 'bfloat16' | 'float64' | 'int64' | 'int32' | 'int16' | 'int8' | 'uint8' | 'bool';

const STORAGE_TYPES: Record<string, StorageDtype> = {
  FloatStorage: 'float32',
  HalfStorage: 'float16',
  BFloat16Storage: 'bfloat16',
  DoubleStorage: 'float64',
  LongStorage: 'int64',
  IntStorage: 'int32',
  ShortStorage: 'int16',
  CharStorage: 'int8',
  ByteStorage: 'uint8',
  BoolStorage: 'bool',
};

export interface StorageRef {
  kind: 'storage';
  dtype: StorageDtype;
  key: string;
  location: string;
  numel: number;
}

export interface TensorRef {
  kind: 'tensor';
  storage: StorageRef;
  offset: number;
  size: number[];
  stride: number[];
}

/** A resolved, allow-listed global. */
export interface GlobalRef {
  kind: 'global';
  module: string;
  name: string;
}

const ALLOWED_CALLABLES = new Set([
  'collections.OrderedDict',
  'torch._utils._rebuild_tensor_v2',
  'torch._utils._rebuild_parameter',
  'torch._utils._rebuild_parameter_with_state',
  // torch.save of a plain dict never needs more; these two appear as harmless metadata in some files.
  'torch.serialization._get_layout',
  'torch._tensor._rebuild_from_type_v2',
]);

function resolveGlobal(module: string, name: string): GlobalRef {
  const full = `${module}.${name}`;
  if (module === 'torch' && name in STORAGE_TYPES) return { kind: 'global', module, name };
  if (ALLOWED_CALLABLES.has(full)) return { kind: 'global', module, name };
  throw new UnsafePickleError(
    `checkpoint refers to the global ${full}, which is not allowed (only tensor data can be loaded)`,
  );
}

export function isTensorRef(v: unknown): v is TensorRef {
  return typeof v === 'object' && v !== null && (v as { kind?: unknown }).kind === 'tensor';
}

function asInts(v: unknown, what: string): number[] {
  if (!Array.isArray(v)) throw new PickleFormatError(`${what} is not a tuple`);
  return v.map((x) => {
    if (typeof x === 'number') return x;
    if (typeof x === 'bigint') return Number(x);
    throw new PickleFormatError(`${what} holds a non-integer`);
  });
}

function callGlobal(g: GlobalRef, args: unknown): unknown {
  const a = Array.isArray(args) ? args : [];
  const full = `${g.module}.${g.name}`;
  switch (full) {
    case 'collections.OrderedDict':
      return new Map();
    case 'torch._utils._rebuild_tensor_v2': {
      const [storage, offset, size, stride] = a;
      if (typeof storage !== 'object' || storage === null || (storage as StorageRef).kind !== 'storage') {
        throw new PickleFormatError('_rebuild_tensor_v2 without a storage');
      }
      return {
        kind: 'tensor',
        storage: storage as StorageRef,
        offset: Number(offset),
        size: asInts(size, 'tensor size'),
        stride: asInts(stride, 'tensor stride'),
      } satisfies TensorRef;
    }
    case 'torch._utils._rebuild_parameter':
    case 'torch._utils._rebuild_parameter_with_state':
    case 'torch._tensor._rebuild_from_type_v2':
      // (data, requires_grad, hooks) / (func, type, args, state): the tensor is what matters.
      if (full === 'torch._tensor._rebuild_from_type_v2') {
        const [fn, , inner] = a;
        if (typeof fn === 'object' && fn !== null && (fn as GlobalRef).kind === 'global')
          return callGlobal(fn as GlobalRef, inner);
        throw new PickleFormatError('_rebuild_from_type_v2 without a function');
      }
      return a[0];
    case 'torch.serialization._get_layout':
      return null;
    default:
      throw new UnsafePickleError(`checkpoint calls ${full}, which is not allowed`);
  }
}

export interface UnpickleOptions {
  /** Resolves BINPERSID/PERSID ids (torch uses them for storages). */
  persistentLoad?: (pid: unknown) => unknown;
}

const MARK = Symbol('mark');

/**
 * Parses one pickle starting at `start`. Returns the value and the offset after STOP (legacy torch
 * files are several pickles back to back).
 */
export function unpickle(buf: Uint8Array, opts: UnpickleOptions = {}, start = 0): { value: unknown; end: number } {
  const dv = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  const stack: unknown[] = [];
  const memo = new Map<number, unknown>();
  let pos = start;
  const need = (n: number): void => {
    if (pos + n > buf.length) throw new PickleFormatError('pickle is truncated');
  };
  const u8 = (): number => {
    need(1);
    return buf[pos++]!;
  };
  const u16 = (): number => {
    need(2);
    const v = dv.getUint16(pos, true);
    pos += 2;
    return v;
  };
  const u32 = (): number => {
    need(4);
    const v = dv.getUint32(pos, true);
    pos += 4;
    return v;
  };
  const bytes = (n: number): Uint8Array => {
    need(n);
    const b = buf.subarray(pos, pos + n);
    pos += n;
    return b;
  };
  const line = (): string => {
    const endl = buf.indexOf(0x0a, pos);
    if (endl < 0) throw new PickleFormatError('pickle is truncated');
    const s = new TextDecoder('latin1').decode(buf.subarray(pos, endl));
    pos = endl + 1;
    return s;
  };
  const utf8 = (b: Uint8Array): string => new TextDecoder().decode(b);
  const pop = (): unknown => {
    if (stack.length === 0) throw new PickleFormatError('pickle stack underflow');
    return stack.pop();
  };
  const popMark = (): unknown[] => {
    const items: unknown[] = [];
    for (;;) {
      const v = pop();
      if (v === MARK) return items.reverse();
      items.push(v);
    }
  };
  const top = (): unknown => {
    if (stack.length === 0) throw new PickleFormatError('pickle stack underflow');
    return stack[stack.length - 1];
  };
  const setItems = (target: unknown, kv: unknown[]): void => {
    if (!(target instanceof Map)) throw new PickleFormatError('SETITEM on a non-dict');
    for (let i = 0; i + 1 < kv.length; i += 2) target.set(kv[i], kv[i + 1]);
  };
  const appendItems = (target: unknown, items: unknown[]): void => {
    if (!Array.isArray(target)) throw new PickleFormatError('APPEND on a non-list');
    target.push(...items);
  };
  const longLE = (b: Uint8Array): bigint | number => {
    let v = 0n;
    for (let i = b.length - 1; i >= 0; i--) v = (v << 8n) | BigInt(b[i]!);
    if (b.length > 0 && (b[b.length - 1]! & 0x80) !== 0) v -= 1n << BigInt(8 * b.length);
    return v >= BigInt(Number.MIN_SAFE_INTEGER) && v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : v;
  };

  for (;;) {
    const op = u8();
    switch (op) {
      case 0x80: // PROTO
        u8();
        break;
      case 0x95: // FRAME
        bytes(8);
        break;
      case 0x2e: // STOP
        return { value: pop(), end: pos };
      case 0x28: // MARK
        stack.push(MARK);
        break;
      case 0x7d: // EMPTY_DICT
        stack.push(new Map());
        break;
      case 0x5d: // EMPTY_LIST
        stack.push([]);
        break;
      case 0x29: // EMPTY_TUPLE
        stack.push([]);
        break;
      case 0x8f: // EMPTY_SET
        stack.push([]);
        break;
      case 0x4e: // NONE
        stack.push(null);
        break;
      case 0x88: // NEWTRUE
        stack.push(true);
        break;
      case 0x89: // NEWFALSE
        stack.push(false);
        break;
      case 0x4a: // BININT
        need(4);
        stack.push(dv.getInt32(pos, true));
        pos += 4;
        break;
      case 0x4b: // BININT1
        stack.push(u8());
        break;
      case 0x4d: // BININT2
        stack.push(u16());
        break;
      case 0x8a: // LONG1
        stack.push(longLE(bytes(u8())));
        break;
      case 0x8b: // LONG4
        stack.push(longLE(bytes(u32())));
        break;
      case 0x49: {
        // INT (text); "01"/"00" are protocol-0 booleans
        const s = line();
        stack.push(s === '01' ? true : s === '00' ? false : Number.parseInt(s, 10));
        break;
      }
      case 0x4c: // LONG (text)
        stack.push(Number.parseInt(line().replace(/L$/, ''), 10));
        break;
      case 0x47: // BINFLOAT (big-endian)
        need(8);
        stack.push(dv.getFloat64(pos, false));
        pos += 8;
        break;
      case 0x8c: // SHORT_BINUNICODE
        stack.push(utf8(bytes(u8())));
        break;
      case 0x58: // BINUNICODE
        stack.push(utf8(bytes(u32())));
        break;
      case 0x8d: {
        // BINUNICODE8
        need(8);
        const n = Number(dv.getBigUint64(pos, true));
        pos += 8;
        stack.push(utf8(bytes(n)));
        break;
      }
      case 0x55: // SHORT_BINSTRING
        stack.push(new TextDecoder('latin1').decode(bytes(u8())));
        break;
      case 0x54: // BINSTRING
        stack.push(new TextDecoder('latin1').decode(bytes(u32())));
        break;
      case 0x43: // SHORT_BINBYTES
        stack.push(bytes(u8()));
        break;
      case 0x42: // BINBYTES
        stack.push(bytes(u32()));
        break;
      case 0x56: // UNICODE (text)
        stack.push(line());
        break;
      case 0x53: {
        // STRING (text, quoted)
        stack.push(line().replace(/^['"]|['"]$/g, ''));
        break;
      }
      case 0x74: // TUPLE
        stack.push(popMark());
        break;
      case 0x85: // TUPLE1
        stack.push([pop()]);
        break;
      case 0x86: {
        // TUPLE2
        const b = pop();
        const a = pop();
        stack.push([a, b]);
        break;
      }
      case 0x87: {
        // TUPLE3
        const c = pop();
        const b = pop();
        const a = pop();
        stack.push([a, b, c]);
        break;
      }
      case 0x6c: // LIST
        stack.push(popMark());
        break;
      case 0x64: {
        // DICT
        const d = new Map();
        setItems(d, popMark());
        stack.push(d);
        break;
      }
      case 0x73: {
        // SETITEM
        const v = pop();
        const k = pop();
        setItems(top(), [k, v]);
        break;
      }
      case 0x75: {
        // SETITEMS
        const kv = popMark();
        setItems(top(), kv);
        break;
      }
      case 0x61: {
        // APPEND
        const v = pop();
        appendItems(top(), [v]);
        break;
      }
      case 0x65: {
        // APPENDS
        const items = popMark();
        appendItems(top(), items);
        break;
      }
      case 0x90: {
        // ADDITEMS (sets are kept as arrays)
        const items = popMark();
        appendItems(top(), items);
        break;
      }
      case 0x71: // BINPUT
        memo.set(u8(), top());
        break;
      case 0x72: // LONG_BINPUT
        memo.set(u32(), top());
        break;
      case 0x70: // PUT (text)
        memo.set(Number.parseInt(line(), 10), top());
        break;
      case 0x94: // MEMOIZE
        memo.set(memo.size, top());
        break;
      case 0x68: // BINGET
      case 0x6a: // LONG_BINGET
      case 0x67: {
        // GET (text)
        const idx = op === 0x68 ? u8() : op === 0x6a ? u32() : Number.parseInt(line(), 10);
        if (!memo.has(idx)) throw new PickleFormatError(`pickle memo ${idx} is missing`);
        stack.push(memo.get(idx));
        break;
      }
      case 0x63: {
        // GLOBAL "module\nname\n"
        const module = line();
        const name = line();
        stack.push(resolveGlobal(module, name));
        break;
      }
      case 0x93: {
        // STACK_GLOBAL
        const name = pop();
        const module = pop();
        if (typeof module !== 'string' || typeof name !== 'string')
          throw new PickleFormatError('STACK_GLOBAL without strings');
        stack.push(resolveGlobal(module, name));
        break;
      }
      case 0x52: {
        // REDUCE
        const args = pop();
        const fn = pop();
        if (typeof fn !== 'object' || fn === null || (fn as GlobalRef).kind !== 'global') {
          throw new PickleFormatError('REDUCE on something that is not a global');
        }
        stack.push(callGlobal(fn as GlobalRef, args));
        break;
      }
      case 0x81: {
        // NEWOBJ: cls.__new__(cls, *args) — only allowed globals can be on the stack anyway.
        const args = pop();
        const cls = pop();
        if (typeof cls !== 'object' || cls === null || (cls as GlobalRef).kind !== 'global') {
          throw new PickleFormatError('NEWOBJ on something that is not a class');
        }
        stack.push(callGlobal(cls as GlobalRef, args));
        break;
      }
      case 0x62: // BUILD: object state (e.g. an OrderedDict's _metadata) carries no weights; drop it.
        pop();
        break;
      case 0x51: {
        // BINPERSID
        const pid = pop();
        if (!opts.persistentLoad) throw new PickleFormatError('pickle uses persistent ids but no loader was given');
        stack.push(opts.persistentLoad(pid));
        break;
      }
      case 0x50: {
        // PERSID (text)
        const pid = line();
        if (!opts.persistentLoad) throw new PickleFormatError('pickle uses persistent ids but no loader was given');
        stack.push(opts.persistentLoad(pid));
        break;
      }
      case 0x30: // POP
        pop();
        break;
      case 0x31: // POP_MARK
        popMark();
        break;
      case 0x32: // DUP
        stack.push(top());
        break;
      case 0x69: {
        // INST "module\nname\n" — builds an arbitrary object: resolve (and so refuse) the class.
        const module = line();
        const name = line();
        const g = resolveGlobal(module, name);
        stack.push(callGlobal(g, popMark()));
        break;
      }
      case 0x6f: {
        // OBJ
        const items = popMark();
        const cls = items.shift();
        if (typeof cls !== 'object' || cls === null || (cls as GlobalRef).kind !== 'global')
          throw new PickleFormatError('OBJ without a class');
        stack.push(callGlobal(cls as GlobalRef, items));
        break;
      }
      default:
        throw new PickleFormatError(`unsupported pickle opcode 0x${op.toString(16)} at byte ${pos - 1}`);
    }
  }
}

/** Converts torch's persistent id tuple ('storage', StorageType, key, location, numel) into a StorageRef. */
export function storageFromPid(pid: unknown): StorageRef {
  if (!Array.isArray(pid) || pid[0] !== 'storage')
    throw new PickleFormatError('unexpected persistent id in checkpoint');
  const [, type, key, location, numel] = pid;
  const g = type as GlobalRef;
  if (typeof g !== 'object' || g === null || g.kind !== 'global' || !(g.name in STORAGE_TYPES)) {
    throw new PickleFormatError('persistent id without a storage type');
  }
  return {
    kind: 'storage',
    dtype: STORAGE_TYPES[g.name]!,
    key: String(key),
    location: String(location),
    numel: Number(numel),
  };
}
