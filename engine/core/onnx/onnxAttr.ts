/**
 * ONNX node attributes (AttributeProto): the values graph edits at run time (onnxEdit.ts) and the converters'
 * GraphBuilder (engine/convert/graph/onnxWriter.ts) both write.
 */
import { ProtoWriter } from './protobuf.js';

export type OnnxAttr =
  | { kind: 'int'; value: number }
  | { kind: 'ints'; value: number[] }
  | { kind: 'float'; value: number }
  | { kind: 'string'; value: string };

export const attr = {
  int: (value: number): OnnxAttr => ({ kind: 'int', value }),
  ints: (value: number[]): OnnxAttr => ({ kind: 'ints', value }),
  float: (value: number): OnnxAttr => ({ kind: 'float', value }),
  string: (value: string): OnnxAttr => ({ kind: 'string', value }),
};

export function attrProto(name: string, a: OnnxAttr): ProtoWriter {
  const w = new ProtoWriter().string(1, name);
  switch (a.kind) {
    case 'float':
      return w.float(2, a.value).int(20, 1);
    case 'int':
      return w.int(3, a.value).int(20, 2);
    case 'string':
      return w.string(4, a.value).int(20, 3);
    case 'ints':
      return w.packedInts(8, a.value).int(20, 7);
  }
}
