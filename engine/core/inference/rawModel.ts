/**
 * A session over in-memory model bytes that answers every graph output, for tools that inspect a model
 * rather than upscale with it (int8 calibration reads intermediate activations, the quantizer compares
 * int8 against fp32). Kept here so onnxruntime stays behind engine/core/inference.
 */
import * as ort from 'onnxruntime-node';

export interface RawOutput {
  data: Float32Array;
  dims: readonly number[];
}

export interface RawModel {
  readonly outputNames: readonly string[];
  /** Runs one float32 NCHW input; answers every float32 output by name. */
  run(input: Float32Array, dims: readonly number[]): Promise<Map<string, RawOutput>>;
  release(): Promise<void>;
}

export interface RawModelOptions {
  threads?: number;
  /**
   * 'basic' keeps an fp16 graph's tensors fp16 between nodes (at 'all', onnxruntime's CPU provider folds the casts
   * it inserts around its fp32 kernels, and the whole graph then computes and stores fp32): the fp16 measurement
   * (fp16Variant.ts) uses it, as nearer to what a GPU provider holds. Default 'all'.
   */
  optimization?: 'basic' | 'all';
}

export async function openRawModel(bytes: Uint8Array, opts: RawModelOptions = {}): Promise<RawModel> {
  const session = await ort.InferenceSession.create(bytes, {
    executionProviders: ['cpu'],
    graphOptimizationLevel: opts.optimization ?? 'all',
    logSeverityLevel: 3,
    ...(opts.threads ? { intraOpNumThreads: opts.threads } : {}),
  });
  return {
    outputNames: session.outputNames,
    async run(input, dims) {
      const out = await session.run({
        [session.inputNames[0] ?? 'input']: new ort.Tensor('float32', input, [...dims]),
      });
      const answer = new Map<string, RawOutput>();
      for (const [name, t] of Object.entries(out))
        if (t.type === 'float32') answer.set(name, { data: t.data as Float32Array, dims: [...t.dims] });
      return answer;
    },
    release: () => session.release(),
  };
}
