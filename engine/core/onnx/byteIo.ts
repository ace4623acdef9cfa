/**
 * 8-bit ends for an upscaler's graph, built at load (issue 37): the pipeline then hands the model its pixels as
 * they are decoded (uint8 RGB, rows of interleaved pixels: NHWC) and gets back pixels ready to stitch, so tiling
 * in and out are row copies instead of JavaScript loops over every value, and the model's output is read back as
 * a quarter of the bytes.
 *
 *   input  uint8 [n,h,w,3] → Transpose(0,3,1,2) → Cast(float) → Div(255) → the model's float NCHW input
 *   output the model's float NCHW output → QuantizeLinear(1/255, 0) → uint8 → Transpose(0,2,3,1)
 *
 * Same bytes as the float path (engine/core/pipeline/infer.ts tileInput / stitch.ts stitch8):
 * - In: Div, not Mul(1/255). A float32 division is correctly rounded, so it gives fround(u / 255), which is what
 *   the JavaScript gives (u · (1/255) in double, stored to float32): equal for all 256 values, checked. A float32
 *   Mul by fround(1/255) differs in 126 of them.
 * - Out: QuantizeLinear is one vectorised kernel where Clip, Mul, Round and Cast take four passes over the
 *   float output (≈ 2 ms against ≈ 40 ms for a 2048×2160 tile, ORT profile on the 2-core machine). It computes
 *   x / fround(1/255) in float32, rounds half to even and saturates to 0..255 (ONNX spec; onnxruntime's CPU kernel
 *   agrees with that bit for bit on 3 M values crowded round the ties). stitch8 computes exactly that in
 *   JavaScript, so both paths give the same bytes (test/engine/byteIo.test.ts). Before issue 37 stitch8 rounded the
 *   exact double 255·x half up: the output differs from that by one level on values within 3·10⁻⁵ of halfway
 *   (3.5–7 per million on Set5 ×4 through the real models, 0.9 % through a bilinear ×4 Resize, whose weights are
 *   eighths; test/engine/byteIo.test.ts bounds them).
 * Transposes sit on the uint8 side, where they move a quarter of the bytes.
 */
import { attr } from './onnxAttr.js';
import { editOnnx, type NewNode, type NewTensor, type NodeEntry } from './onnxEdit.js';
import { ONNX_FLOAT, readOnnx, type OnnxModelInfo, type OnnxValueInfo } from './onnxReader.js';

const ONNX_UINT8 = 2;
/** QuantizeLinear is opset 10. */
const MIN_OPSET = 10;
const PREFIX = 'crisp_u8';
export const BYTE_INPUT = `${PREFIX}_input`;
export const BYTE_OUTPUT = `${PREFIX}_output`;

function isNchwRgb(v: OnnxValueInfo | undefined): v is OnnxValueInfo {
  return v !== undefined && v.elemType === ONNX_FLOAT && v.shape.length === 4 && v.shape[1] === 3;
}

/**
 * The one rule: a graph gets 8-bit ends when it is an RGB upscaler the wrapper cannot change the meaning of: one
 * float32 input and one float32 output, both [n, 3, h, w] with the channel count fixed at 3, opset ≥ 10, and every
 * weight inside the file. Answers why not, or undefined when it can be wrapped.
 */
export function byteIoRefusal(info: OnnxModelInfo): string | undefined {
  if (info.opset < MIN_OPSET) return `opset ${info.opset} is below ${MIN_OPSET}`;
  const weights = new Set(info.initializers.map((t) => t.name));
  // Graphs of IR < 4 list their weights among the inputs too.
  const inputs = info.inputs.filter((v) => !weights.has(v.name));
  if (inputs.length !== 1 || inputs[0] !== info.inputs[0]) return `${inputs.length} data inputs`;
  if (info.outputs.length !== 1) return `${info.outputs.length} outputs`;
  if (!isNchwRgb(info.inputs[0]) || !isNchwRgb(info.outputs[0])) return 'input or output is not float32 [n,3,h,w]';
  const external = info.initializers.find((t) => t.data.length === 0 && t.dims.reduce((n, d) => n * d, 1) > 0);
  if (external) return `weight ${external.name} is stored outside the file`;
  const names = new Set(info.nodes.flatMap((n) => [...n.inputs, ...n.outputs]));
  if ([...names].some((n) => n.startsWith(PREFIX))) return `tensor names starting ${PREFIX} are taken`;
  return undefined;
}

function scalar(name: string, value: number): NewTensor {
  return { name, dims: [], dataType: ONNX_FLOAT, raw: new Uint8Array(new Float32Array([value]).buffer) };
}

/** Symbolic or fixed sizes carried over; an unnamed one gets a name of its own. */
function dim(d: number | string | null, fallback: string): number | string {
  return d ?? fallback;
}

/**
 * The model with 8-bit NHWC ends (see the file comment). Throws when byteIoRefusal refuses it; the returned graph
 * reads `BYTE_INPUT` uint8 [n,h,w,3] and writes `BYTE_OUTPUT` uint8 [n,h·s,w·s,3].
 */
export function withByteIo(model: Uint8Array): Uint8Array {
  const info = readOnnx(model);
  const why = byteIoRefusal(info);
  if (why) throw new Error(`the model cannot take 8-bit ends: ${why}`);
  const input = info.inputs[0]!;
  const output = info.outputs[0]!;
  const p = PREFIX;
  let count = 0;
  const step = (op: string, inputs: string[], out: string, attrs?: NewNode['attrs']): NodeEntry => ({
    add: { op, name: `${p}_${op.toLowerCase()}${count++}`, inputs, outputs: [out], ...(attrs ? { attrs } : {}) },
  });
  const head: NodeEntry[] = [
    step('Transpose', [BYTE_INPUT], `${p}_nchw`, { perm: attr.ints([0, 3, 1, 2]) }),
    step('Cast', [`${p}_nchw`], `${p}_float`, { to: attr.int(ONNX_FLOAT) }),
    step('Div', [`${p}_float`, `${p}_255`], input.name),
  ];
  const tail: NodeEntry[] = [
    step('QuantizeLinear', [output.name, `${p}_step`, `${p}_zero`], `${p}_nchw_out`),
    step('Transpose', [`${p}_nchw_out`], BYTE_OUTPUT, { perm: attr.ints([0, 2, 3, 1]) }),
  ];
  const [n, , h, w] = input.shape;
  const [on, , oh, ow] = output.shape;
  return editOnnx(model, {
    nodes: [...head, ...info.nodes.map((_, i) => ({ keep: i })), ...tail],
    addInitializers: [
      scalar(`${p}_255`, 255),
      // Float32Array rounds it: the scale is fround(1/255), stitch.ts's STEP8.
      scalar(`${p}_step`, 1 / 255),
      { name: `${p}_zero`, dims: [], dataType: ONNX_UINT8, raw: new Uint8Array([0]) },
    ],
    replaceIo: {
      input: {
        name: BYTE_INPUT,
        elemType: ONNX_UINT8,
        shape: [dim(n!, `${p}_n`), dim(h!, `${p}_h`), dim(w!, `${p}_w`), 3],
      },
      output: {
        name: BYTE_OUTPUT,
        elemType: ONNX_UINT8,
        shape: [dim(on!, `${p}_on`), dim(oh!, `${p}_oh`), dim(ow!, `${p}_ow`), 3],
      },
    },
    note: 'crisp: 8-bit NHWC ends added at load (engine/core/onnx/byteIo.ts)',
  });
}
