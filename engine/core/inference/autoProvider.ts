/**
 * Which provider `--ep auto` runs one job on. A GPU provider's first image on a model pays a start-up (adapter,
 * shader compilation) that a small job never earns back: on the H100 a 256² input took 1.94 s on WebGPU and
 * 1.31 s on the CPU (issue 37). So while no GPU session is warm for the model, a job goes to the GPU only when
 * the time it saves over the CPU covers that start-up; once one is warm, every job uses it.
 *
 * Small jobs sent to the CPU are not lost to the GPU forever: what each of them would have saved on a warm GPU
 * is added up per model, and once that sum with the next job's saving covers the start-up, the GPU is started
 * (the ski-rental rule: a batch of many small images never pays more than twice the better of the two).
 *
 * Pure: the Inference (inference.ts) keeps the warm sessions and the sums, and says why in the job's result.
 */
import type { ExecutionProvider } from './providers.js';

/**
 * The measurements the estimate rests on, all realesr-general-x4v3 (4.86 MB of fp32 weights) on one
 * 960×540 input (0.518 MP) → 3840×2160, bare `session.run` (issue 37's table and notes/s2/37.md):
 * - H100 WebGPU fp32: 0.178 s; its first image costs ~1.4 s more than later ones.
 * - 16-core CPU (the H100 machine): 1.68 s. 2-core CPU (the development machine): 6.6–6.8 s.
 */
export const AUTO_PROVIDER_MEASURED = {
  /** Seconds a GPU provider's first image on a model costs on top of its run (adapter + shader compilation). */
  gpuStartSeconds: 1.4,
  /** Model weights the rates below were measured with, in bytes (realesr-general-x4v3.onnx). */
  referenceModelBytes: 4_861_033,
  /** Input megapixels of the measured image (960×540). */
  referenceInputMp: 0.5184,
  gpuRunSeconds: 0.178,
  /** CPU run seconds by intra-op threads. */
  cpuRunSeconds: [
    { threads: 2, seconds: 6.7 },
    { threads: 16, seconds: 1.68 },
  ],
} as const;

/**
 * CPU seconds per input megapixel of the reference model on `threads` threads. The two measured points give
 * seconds ∝ threads^-b with b = log(6.7 / 1.68) / log(16 / 2) ≈ 0.67 (cores do not scale linearly: memory
 * bandwidth and the convolution's own serial parts); outside 2–16 the same curve is extended.
 */
export function cpuSecondsPerInputMp(threads: number): number {
  const [lo, hi] = AUTO_PROVIDER_MEASURED.cpuRunSeconds;
  const b = Math.log(lo.seconds / hi.seconds) / Math.log(hi.threads / lo.threads);
  const seconds = lo.seconds * Math.pow(lo.threads / Math.max(1, threads), b);
  return seconds / AUTO_PROVIDER_MEASURED.referenceInputMp;
}

export const GPU_SECONDS_PER_INPUT_MP = AUTO_PROVIDER_MEASURED.gpuRunSeconds / AUTO_PROVIDER_MEASURED.referenceInputMp;

/**
 * A job's model work. Crisp's models are convolutional and run at their input's resolution, so their work
 * grows with the pixels they are given and with their weights; a second pass (×scale²) feeds the model its own
 * output, so `inputPixels` counts both passes' inputs.
 */
export interface JobWork {
  /** Pixels the model is given over the whole job (first pass + second pass, if any). */
  inputPixels: number;
  /** The model file's size in bytes: its per-pixel cost relative to the measured model. */
  modelBytes: number;
}

export interface AutoProviderInput {
  /** Providers auto may use, best first, cpu last (broken ones already left out). */
  candidates: readonly ExecutionProvider[];
  /** GPU providers with a session already open for this model. */
  warm: ReadonlySet<ExecutionProvider>;
  /** The job's work; undefined when unknown (then the best provider, as before this rule). */
  work: JobWork | undefined;
  /** CPU threads inference may use. */
  cpuThreads: number;
  /** Seconds earlier small jobs on this model would have saved on a warm GPU (kept by the caller). */
  forgoneSeconds: number;
}

export interface AutoProviderChoice {
  provider: ExecutionProvider;
  /** One sentence for the result (`--json` device.reason). */
  reason: string;
  /** When the CPU was chosen over a cold GPU: what a warm GPU would have saved, for the caller's sum. */
  forgone?: number;
}

const secs = (s: number) => `${s < 10 ? s.toFixed(2) : s.toFixed(0)} s`;

export function chooseAutoProvider(i: AutoProviderInput): AutoProviderChoice {
  const gpu = i.candidates.find((p) => p !== 'cpu');
  if (!gpu) return { provider: 'cpu', reason: 'cpu: auto found no GPU provider that works on this computer.' };
  if (i.warm.has(gpu))
    return { provider: gpu, reason: `${gpu}: auto's first choice here, its session for this model already warm.` };
  if (!i.work) return { provider: gpu, reason: `${gpu}: auto's first choice here (the job's size was not known).` };
  const weight = i.work.modelBytes / AUTO_PROVIDER_MEASURED.referenceModelBytes;
  const mp = i.work.inputPixels / 1e6;
  const cpu = mp * weight * cpuSecondsPerInputMp(i.cpuThreads);
  const onGpu = mp * weight * GPU_SECONDS_PER_INPUT_MP;
  const saved = Math.max(0, cpu - onGpu);
  const start = AUTO_PROVIDER_MEASURED.gpuStartSeconds;
  const est = `about ${secs(cpu)} on the CPU (${i.cpuThreads} threads) against ${secs(onGpu)} on ${gpu} plus its ~${secs(start)} start-up`;
  if (saved + i.forgoneSeconds >= start) {
    const earlier = i.forgoneSeconds > 0 ? ` with ${secs(i.forgoneSeconds)} saved up by earlier small jobs` : '';
    return { provider: gpu, reason: `${gpu}: this job runs ${est}${earlier}, so starting ${gpu} pays.` };
  }
  return {
    provider: 'cpu',
    reason: `cpu: this job runs ${est}, so it finishes sooner on the CPU.`,
    forgone: saved,
  };
}
