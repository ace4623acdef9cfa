/**
 * UpscaleBackend: one interface over the contract, two implementations: the local engine in a worker
 * process (localBackend) and any service speaking the contract over HTTP (remoteBackend). The job queue
 * only ever sees this interface.
 */
import type { SaveImageAs, Scale, SizeRequest } from '../../engine/contract/index.js';
import type { FaceJob, MetadataPolicy, Precision } from '../../engine/core/index.js';
import type { AccountView, DeviceUsed, Mode } from '../service/crispService.js';

export interface UpscaleSettings {
  /** A contract model name; a backend passes anything else through and lets its engine or server refuse it. */
  model: string;
  scale: Scale;
  /**
   * An exact output size instead of `scale` (engine/contract/geometry.ts). The local engine runs the model
   * pass that reaches it and resamples once; Cloud sends the smallest contract scale that reaches it and
   * resizes the download to the exact size.
   */
  size?: SizeRequest;
  saveImageAs: SaveImageAs;
  compression: number;
  /**
   * Face enhancement of this job (core's one face vocabulary); absent: none. It travels per job, so a new
   * strength never restarts the local engine. A service receives only its presence (the contract's
   * `enhanceFace`) and applies its own face model and strength.
   */
  face?: FaceJob;
  /** extension: denoise strength 0–1, only for the contract's DENOISE_MODEL; absent = not asked for. */
  denoise?: number;
  /** extension (local engine): fp32, int8 (CPU) or fp16 (GPU); absent = automatic. */
  precision?: Precision;
  /** extension (local engine only): 2 = double upscale; absent = one pass. The contract has no such field. */
  passes?: 2;
  /** extension (local engine only): a 1× model run before the upscaler (chain); absent = none. */
  preModel?: string;
  /** extension (local engine only): the metadata policy; absent = the input's EXIF and an sRGB tag. */
  metadata?: MetadataPolicy;
}

export interface Dimensions {
  width: number;
  height: number;
}

export interface UpscaleRequest {
  inputPath: string;
  /** The name shown to the person and sent as originalFileName. */
  inputName: string;
  settings: UpscaleSettings;
  /** Final output path: written atomically (temp + rename); on failure or cancel nothing exists under it. */
  outputPath: string;
  signal?: AbortSignal;
  /**
   * Called at most once, when the image's model work is done and only its encode and write remain (local engine):
   * the caller may pass the next image now, and the backend overlaps the two.
   */
  onEncoding?: () => void;
  /** 0–100, never decreasing; etaSeconds: estimated seconds left, when the backend knows (local engine). */
  onProgress?: (percent: number, etaSeconds?: number) => void;
  /**
   * An opaque token from an earlier attempt's onResumable. A backend that recognises it (same service, same
   * settings) picks up that attempt's task instead of starting, and paying for, a new one.
   */
  resume?: string;
  /** Called as soon as the attempt can be resumed (remote: the task was accepted); persist the token. */
  onResumable?: (token: string) => void;
}

export interface UpscaleOutcome {
  outputPath: string;
  dimensions: Dimensions;
  fileSize: number;
  /** Credits the service deducted for this image (0 locally). */
  creditsDeducted: number;
  warnings: string[];
  /** With face enhancement: faces found in the image and how many were enhanced (absent when not reported). */
  faces?: FaceCounts;
  /** Local engine: the device that ran the model (auto may have fallen back to the CPU) and its precision. */
  device?: DeviceUsed;
}

export interface FaceCounts {
  found: number;
  enhanced: number;
}

export interface UpscaleBackend {
  readonly mode: Mode;
  upscale(request: UpscaleRequest): Promise<UpscaleOutcome>;
  /** Credits `itemCount` images with these settings will cost (0 locally). */
  estimate(settings: UpscaleSettings, itemCount: number): Promise<number>;
  /** Balance where the service offers one; `available: false` otherwise (never an error for a missing endpoint). */
  getAccount(): Promise<AccountView>;
  /**
   * Services only: whether start-task accepts enhanceFace, from the get-capabilities extension; null when the
   * service does not say (a third-party service, or none reachable): it then decides per request.
   */
  faceEnhancement?(): Promise<boolean | null>;
  /**
   * Services only: the model names the service runs, from the get-capabilities extension; null when it does
   * not say (an older or third-party service, or none reachable): every contract model is then offered.
   */
  offeredModels?(): Promise<string[] | null>;
  /**
   * Local engine only: the execution providers onnxruntime can use on this computer, best first (the order
   * Automatic tries them; cpu last). Asked of the engine process, the only one that loads onnxruntime.
   */
  devices?(): Promise<string[]>;
  close(): Promise<void>;
}
