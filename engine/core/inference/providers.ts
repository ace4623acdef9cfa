/**
 * The execution providers a person can ask for. Kept apart from inference.ts (which loads onnxruntime) so
 * option declarations, the CLI's --help and the renderer can list them without loading the runtime.
 */
export const EXECUTION_PROVIDERS = ['auto', 'cpu', 'webgpu', 'cuda', 'dml', 'coreml'] as const;
export type ExecutionProviderRequest = (typeof EXECUTION_PROVIDERS)[number];
