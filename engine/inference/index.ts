export {
  EXECUTION_PROVIDERS,
  InferenceProviderError,
  autoProviders,
  createInference,
  runModelBytes,
  type ExecutionProvider,
  type ExecutionProviderChoice,
  type ExecutionProviderRequest,
  type Inference,
  type InferenceOptions,
  type ModelSession,
  type TensorResult,
} from './inference.js';
