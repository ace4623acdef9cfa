/**
 * The execution providers a person can ask for. Kept apart from inference.ts (which loads onnxruntime) so
 * option declarations, the CLI's --help and the renderer can list them without loading the runtime.
 */
export const EXECUTION_PROVIDERS = ['auto', 'cpu', 'webgpu', 'cuda', 'dml', 'coreml'] as const;
export type ExecutionProviderRequest = (typeof EXECUTION_PROVIDERS)[number];
/** A provider a session actually runs on (`auto` resolved). */
export type ExecutionProvider = Exclude<ExecutionProviderRequest, 'auto'>;

/**
 * The precisions a person can ask for: int8 runs on the CPU provider, fp16 on GPU providers (each only where its
 * variant of the model was measured close enough to fp32; precision.ts). Kept here for the same reason.
 */
export const PRECISIONS = ['auto', 'fp32', 'int8', 'fp16'] as const;
export type PrecisionRequest = (typeof PRECISIONS)[number];
export type Precision = Exclude<PrecisionRequest, 'auto'>;
