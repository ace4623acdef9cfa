/**
 * The conv → [PReLU] → conv chains of a graph: where cross-layer range equalization (engine/convert/int8/
 * equalize.ts) may rescale channels, and where the run-time PReLU rewrite (preluRewrite.ts) looks.
 */
import { ONNX_FLOAT, type OnnxModelInfo } from './onnxReader.js';

export interface EqualizePair {
  /** Node indices: producer conv, optional PReLU, consumer conv. */
  first: number;
  prelu: number | undefined;
  second: number;
  /** Tensors whose channels scale with s (the first conv's output, the PReLU's output). */
  tensors: string[];
}

/** conv → [PReLU] → conv chains whose intermediate tensors have no other consumer. */
export function equalizablePairs(info: OnnxModelInfo): EqualizePair[] {
  const inits = new Map(info.initializers.map((t) => [t.name, t]));
  const consumers = new Map<string, number[]>();
  info.nodes.forEach((n, i) => n.inputs.forEach((x) => consumers.set(x, [...(consumers.get(x) ?? []), i])));
  const outputs = new Set(info.outputs.map((o) => o.name));
  const only = (t: string): number | undefined => {
    const c = consumers.get(t) ?? [];
    return c.length === 1 && !outputs.has(t) ? c[0] : undefined;
  };
  const plainConv = (i: number): boolean => {
    const n = info.nodes[i]!;
    const w = inits.get(n.inputs[1] ?? '');
    const b = n.inputs[2] ? inits.get(n.inputs[2]) : undefined;
    return (
      n.opType === 'Conv' &&
      w?.dataType === ONNX_FLOAT &&
      w.dims.length === 4 &&
      (n.attrs.group === undefined || n.attrs.group === 1) &&
      (!n.inputs[2] || b?.dataType === ONNX_FLOAT)
    );
  };
  const pairs: EqualizePair[] = [];
  info.nodes.forEach((n, i) => {
    if (!plainConv(i)) return;
    const out = n.outputs[0]!;
    let next = only(out);
    if (next === undefined) return;
    const tensors = [out];
    let prelu: number | undefined;
    if (info.nodes[next]!.opType === 'PRelu') {
      const slope = inits.get(info.nodes[next]!.inputs[1] ?? '');
      // Only a per-channel (or scalar) constant slope keeps PReLU homogeneous channel by channel.
      if (!slope || slope.dataType !== ONNX_FLOAT) return;
      prelu = next;
      tensors.push(info.nodes[next]!.outputs[0]!);
      next = only(info.nodes[next]!.outputs[0]!);
      if (next === undefined) return;
    }
    if (!plainConv(next) || info.nodes[next]!.inputs[0] !== tensors.at(-1)) return;
    pairs.push({ first: i, prelu, second: next, tensors });
  });
  return pairs;
}
