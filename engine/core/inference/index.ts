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
  type JobInference,
  type ModelSession,
  type TensorResult,
} from './inference.js';
export {
  AUTO_PROVIDER_MEASURED,
  chooseAutoProvider,
  cpuSecondsPerInputMp,
  GPU_SECONDS_PER_INPUT_MP,
  type AutoProviderChoice,
  type AutoProviderInput,
  type JobWork,
} from './autoProvider.js';
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
export {
  buildFp16,
  findFp16Manifest,
  fp16CacheDir,
  fp16ManifestSchema,
  FP16_QUALITY_BAR_DB,
  saveFp16Manifest,
  sha256Of,
  type Fp16Manifest,
} from './fp16Variant.js';
export { openRawModel, type RawModel, type RawOutput } from './rawModel.js';
