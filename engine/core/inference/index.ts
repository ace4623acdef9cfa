export {
  EXECUTION_PROVIDERS,
  InferenceProviderError,
  autoProviders,
  createInference,
  runModelBytes,
  type ByteTensorResult,
  type ExecutionProvider,
  type ExecutionProviderChoice,
  type ExecutionProviderRequest,
  type GraphSession,
  type Inference,
  type InferenceOptions,
  type ModelSession,
  type TensorResult,
} from './inference.js';
export { cpuFeatures, int8FlagsFromCpuinfo, INT8_DOT_FLAGS, type CpuFeatures } from './cpuFeatures.js';
export {
  choosePrecision,
  PRECISIONS,
  type Precision,
  type PrecisionChoice,
  type PrecisionRequest,
} from './precision.js';
export {
  fileSha256,
  findInt8Variant,
  int8CacheDir,
  int8FileNames,
  int8ManifestSchema,
  INT8_QUALITY_BAR_DB,
  saveInt8Variant,
  type Int8Manifest,
  type Int8Variant,
} from './int8Variant.js';
export { openRawModel, type RawModel, type RawOutput } from './rawModel.js';
