/**
 * ncnn .param/.bin → ONNX, layer by layer, so an Upscayl models folder can be used as is.
 * Weights: Convolution weights are "type 0" blobs (a 4-byte flag: 0x01306B47 = fp16, 0 = fp32,
 * padded to 4 bytes); biases and PReLU slopes are raw fp32. Only the layer types Real-ESRGAN style
 * models (SRVGGNetCompact and RRDBNet) use are translated; anything else is refused by name.
 */
import { attr, GraphBuilder } from './graph/onnxWriter.js';
import { halfToFloat } from './checkpoint/stateDict.js';
import { CrispError } from '../contract/errorCatalog.js';

/** A catalog `bad-model-file` failure (engine/contract/errorCatalog.ts); the message says what and why. */
export class NcnnError extends CrispError {
  override readonly name = 'NcnnError';
  constructor(message: string) {
    super('bad-model-file', message);
  }
}

const NCNN_MAGIC = 7767517;
const TAG_FP16 = 0x01306b47;
const TAG_FP32_SCALED = 0x0002c056;

export interface NcnnLayer {
  type: string;
  name: string;
  bottoms: string[];
  tops: string[];
  params: Map<number, number | number[]>;
}

export function parseNcnnParam(text: string): NcnnLayer[] {
  const lines = text
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter((l) => l.length > 0);
  if (Number(lines[0]) !== NCNN_MAGIC) throw new NcnnError('not an ncnn .param file (bad magic)');
  const [layerCount] = (lines[1] ?? '').split(/\s+/).map(Number);
  const layers: NcnnLayer[] = [];
  for (const line of lines.slice(2)) {
    const tok = line.split(/\s+/);
    const [type, name, nb, nt] = tok;
    if (!type || !name || nb === undefined || nt === undefined)
      throw new NcnnError(`malformed ncnn layer line: ${line}`);
    const b = Number(nb);
    const t = Number(nt);
    const bottoms = tok.slice(4, 4 + b);
    const tops = tok.slice(4 + b, 4 + b + t);
    const params = new Map<number, number | number[]>();
    for (const kv of tok.slice(4 + b + t)) {
      const [ks, vs] = kv.split('=');
      const k = Number(ks);
      if (!Number.isInteger(k) || vs === undefined) throw new NcnnError(`malformed ncnn param ${kv} in layer ${name}`);
      if (k <= -23300) {
        // Array parameter: key -23300-id = count,v1,v2...
        const [, ...vals] = vs.split(',').map(Number);
        params.set(-23300 - k, vals);
      } else params.set(k, Number(vs));
    }
    layers.push({ type, name, bottoms, tops, params });
  }
  if (layerCount !== undefined && layers.length !== layerCount)
    throw new NcnnError(`ncnn .param declares ${layerCount} layers but has ${layers.length}`);
  return layers;
}

class BinReader {
  private pos = 0;
  private dv: DataView;
  constructor(private buf: Uint8Array) {
    this.dv = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  }
  private need(n: number, what: string): void {
    if (this.pos + n > this.buf.length)
      throw new NcnnError(`ncnn .bin is too short for ${what} (the .bin does not match the .param)`);
  }
  raw32(count: number, what: string): Float32Array {
    this.need(count * 4, what);
    const out = new Float32Array(count);
    for (let i = 0; i < count; i++) out[i] = this.dv.getFloat32(this.pos + 4 * i, true);
    this.pos += count * 4;
    return out;
  }
  /** ncnn ModelBin type 0: flag word then fp16 / fp32 data. */
  tagged(count: number, what: string): Float32Array {
    this.need(4, what);
    const tag = this.dv.getUint32(this.pos, true);
    this.pos += 4;
    if (tag === TAG_FP16) {
      const bytes = Math.ceil((count * 2) / 4) * 4;
      this.need(bytes, what);
      const out = new Float32Array(count);
      for (let i = 0; i < count; i++) out[i] = halfToFloat(this.dv.getUint16(this.pos + 2 * i, true));
      this.pos += bytes;
      return out;
    }
    if (tag === 0 || tag === TAG_FP32_SCALED) return this.raw32(count, what);
    throw new NcnnError(
      `${what}: unsupported ncnn weight storage (flag 0x${tag.toString(16)}; int8/quantised models are not supported)`,
    );
  }
  get remaining(): number {
    return this.buf.length - this.pos;
  }
}

function p(l: NcnnLayer, k: number, def: number): number {
  const v = l.params.get(k);
  return typeof v === 'number' ? v : def;
}

export interface NcnnConversion {
  onnx: Uint8Array;
  /** The distinct ncnn layer types the model used (for messages and tests). */
  layerTypes: string[];
}

export function convertNcnn(paramText: string, bin: Uint8Array, opts: { producer?: string } = {}): NcnnConversion {
  const layers = parseNcnnParam(paramText);
  const g = new GraphBuilder('ncnn');
  const reader = new BinReader(bin);
  const alias = new Map<string, string>();
  const consumed = new Set<string>();
  const produced: string[] = [];
  const val = (blob: string): string => {
    const v = alias.get(blob);
    if (v === undefined) throw new NcnnError(`ncnn blob ${blob} is used before it is produced`);
    consumed.add(blob);
    return v;
  };
  const set = (blob: string, v: string): void => {
    alias.set(blob, v);
    produced.push(blob);
  };
  let inputSeen = false;
  for (const l of layers) {
    const ins = (): string[] => l.bottoms.map(val);
    switch (l.type) {
      case 'Input':
        if (inputSeen) throw new NcnnError('ncnn model with more than one input is not supported');
        inputSeen = true;
        set(l.tops[0]!, 'input');
        break;
      case 'Split': {
        const v = val(l.bottoms[0]!);
        for (const t of l.tops) set(t, v);
        break;
      }
      case 'Noop':
      case 'Dropout':
        set(l.tops[0]!, val(l.bottoms[0]!));
        break;
      case 'Convolution': {
        const numOut = p(l, 0, 0);
        const kw = p(l, 1, 0);
        const kh = p(l, 11, kw);
        const dw = p(l, 2, 1);
        const dh = p(l, 12, dw);
        const sw = p(l, 3, 1);
        const sh = p(l, 13, sw);
        const pl = p(l, 4, 0);
        const pt = p(l, 14, pl);
        const pr = p(l, 15, pl);
        const pb = p(l, 16, pt);
        const bias = p(l, 5, 0);
        const size = p(l, 6, 0);
        if (p(l, 8, 0) !== 0) throw new NcnnError(`layer ${l.name}: int8 convolution is not supported`);
        if (pl < 0 || pt < 0) throw new NcnnError(`layer ${l.name}: SAME padding (-233) is not supported`);
        const cin = size / (numOut * kw * kh);
        if (!Number.isInteger(cin))
          throw new NcnnError(`layer ${l.name}: weight size ${size} does not fit ${numOut}×${kh}×${kw}`);
        const w = g.weight(`${l.name}.weight`, [numOut, cin, kh, kw], reader.tagged(size, `${l.name} weights`));
        const b = bias ? g.weight(`${l.name}.bias`, [numOut], reader.raw32(numOut, `${l.name} bias`)) : null;
        let out = g.conv(val(l.bottoms[0]!), w, b, [kh, kw], [pt, pl, pb, pr], {
          strides: [sh, sw],
          dilations: [dh, dw],
        });
        const act = p(l, 9, 0);
        const actParams = l.params.get(10);
        if (act === 1) out = g.node('Relu', [out]);
        else if (act === 2)
          out = g.node('LeakyRelu', [out], { alpha: attr.float(Array.isArray(actParams) ? (actParams[0] ?? 0) : 0) });
        else if (act === 4) out = g.node('Sigmoid', [out]);
        else if (act !== 0) throw new NcnnError(`layer ${l.name}: fused activation type ${act} is not supported`);
        set(l.tops[0]!, out);
        break;
      }
      case 'PReLU': {
        const n = p(l, 0, 1);
        const slope = reader.raw32(n, `${l.name} slopes`);
        const s = g.weight(`${l.name}.slope`, n === 1 ? [1] : [n, 1, 1], slope);
        set(l.tops[0]!, g.node('PRelu', [val(l.bottoms[0]!), s]));
        break;
      }
      case 'ReLU': {
        const slope = p(l, 0, 0);
        set(l.tops[0]!, slope === 0 ? g.node('Relu', ins()) : g.node('LeakyRelu', ins(), { alpha: attr.float(slope) }));
        break;
      }
      case 'Sigmoid':
        set(l.tops[0]!, g.node('Sigmoid', ins()));
        break;
      case 'PixelShuffle': {
        if (p(l, 1, 0) !== 0) throw new NcnnError(`layer ${l.name}: PixelShuffle mode ${p(l, 1, 0)} is not supported`);
        // ncnn's mode 0 is torch's PixelShuffle, i.e. ONNX DepthToSpace mode CRD.
        set(l.tops[0]!, g.node('DepthToSpace', ins(), { blocksize: attr.int(p(l, 0, 1)), mode: attr.string('CRD') }));
        break;
      }
      case 'Interp': {
        const type = p(l, 0, 0);
        const hs = p(l, 1, 1);
        const ws = p(l, 2, 1);
        if (p(l, 3, 0) !== 0 || p(l, 4, 0) !== 0)
          throw new NcnnError(`layer ${l.name}: Interp to a fixed output size is not supported`);
        if (type === 1) set(l.tops[0]!, g.resizeNearest(val(l.bottoms[0]!), hs, ws));
        else if (type === 2) {
          const scales = g.weight(`${l.name}.scales`, [4], new Float32Array([1, 1, hs, ws]));
          const mode = p(l, 6, 0) ? 'align_corners' : 'half_pixel';
          set(
            l.tops[0]!,
            g.node('Resize', [val(l.bottoms[0]!), '', scales], {
              mode: attr.string('linear'),
              coordinate_transformation_mode: attr.string(mode),
            }),
          );
        } else throw new NcnnError(`layer ${l.name}: Interp resize type ${type} is not supported`);
        break;
      }
      case 'Concat': {
        const axis = p(l, 0, 0);
        // ncnn axes exclude the batch dimension.
        set(l.tops[0]!, g.node('Concat', ins(), { axis: attr.int(axis + 1) }));
        break;
      }
      case 'BinaryOp': {
        const op = p(l, 0, 0);
        const ops = ['Add', 'Sub', 'Mul', 'Div', 'Max', 'Min', 'Pow'];
        const withScalar = p(l, 1, 0);
        let inputs = ins();
        if (withScalar) inputs = [inputs[0]!, g.weight(`${l.name}.b`, [], new Float32Array([p(l, 2, 0)]))];
        let opName = ops[op];
        if (op === 7 || op === 8) {
          opName = op === 7 ? 'Sub' : 'Div';
          inputs = [inputs[1]!, inputs[0]!];
        }
        if (!opName) throw new NcnnError(`layer ${l.name}: BinaryOp type ${op} is not supported`);
        set(l.tops[0]!, g.node(opName, inputs));
        break;
      }
      case 'Eltwise': {
        const op = p(l, 0, 1);
        const coeffs = l.params.get(1);
        let inputs = ins();
        if (Array.isArray(coeffs) && coeffs.length > 0 && coeffs.some((c) => c !== 1)) {
          inputs = inputs.map((x, i) =>
            g.node('Mul', [x, g.weight(`${l.name}.coeff${i}`, [], new Float32Array([coeffs[i] ?? 1]))]),
          );
        }
        const opName = op === 0 ? 'Mul' : op === 1 ? 'Sum' : op === 2 ? 'Max' : null;
        if (!opName) throw new NcnnError(`layer ${l.name}: Eltwise type ${op} is not supported`);
        set(l.tops[0]!, g.node(opName, inputs));
        break;
      }
      default:
        throw new NcnnError(
          `unsupported ncnn layer type ${l.type} (layer ${l.name}); supported are the layers of SRVGGNetCompact and RRDBNet models`,
        );
    }
  }
  if (!inputSeen) throw new NcnnError('ncnn model has no Input layer');
  if (reader.remaining !== 0)
    throw new NcnnError(`ncnn .bin has ${reader.remaining} bytes left over (the .bin does not match the .param)`);
  const outputs = produced.filter((b) => !consumed.has(b));
  if (outputs.length !== 1)
    throw new NcnnError(`ncnn model must have exactly one output, found ${outputs.join(', ') || 'none'}`);
  // Route the single dangling blob to `output` through an Identity so the graph output has a fixed name.
  g.node('Identity', [alias.get(outputs[0]!)!], {}, 'output');
  return {
    onnx: g.toBytes({ producer: opts.producer ?? 'crisp-ncnn2onnx' }),
    layerTypes: [...new Set(layers.map((l) => l.type))],
  };
}
