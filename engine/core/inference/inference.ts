/**
 * The only module that talks to onnxruntime. Everything else sees `Inference` / `ModelSession`, so swapping
 * the runtime or its providers never touches the pipeline.
 */
import { existsSync, readdirSync } from 'node:fs';
import os from 'node:os';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import * as ort from 'onnxruntime-node';
import { BYTE_INPUT, BYTE_OUTPUT, byteIoRefusal, withByteIo } from '../onnx/byteIo.js';
import { readOnnx } from '../onnx/onnxReader.js';
import { branchlessPrelu } from '../onnx/preluRewrite.js';
import type { ResolvedModel } from '../models/catalog.js';
import { cpuFeatures, type CpuFeatures } from './cpuFeatures.js';
import { buildFp16, findFp16Manifest, fp16CacheDir, type Fp16Manifest } from './fp16Variant.js';
import { findInt8Variant, int8CacheDir, type Int8Variant } from './int8Variant.js';
import { chooseAutoProvider, type JobWork } from './autoProvider.js';
import { choosePrecision, type Precision, type PrecisionRequest } from './precision.js';

import { EXECUTION_PROVIDERS, type ExecutionProvider, type ExecutionProviderRequest } from './providers.js';
import { CrispError } from '../../contract/errorCatalog.js';

export { EXECUTION_PROVIDERS, type ExecutionProvider, type ExecutionProviderRequest };
/** Alias used by the engine's options. */
export type ExecutionProviderChoice = ExecutionProviderRequest;

export interface InferenceOptions {
  executionProvider: ExecutionProviderRequest;
  /** Intra-op threads for CPU; default: onnxruntime's choice (one per core). */
  threads?: number;
  /** auto's candidates, best first (default: autoProviders()); lets tests exercise the fallback. */
  candidates?: ExecutionProvider[];
  /** Where fallback notices go (once per provider); default console.warn. */
  log?: (message: string) => void;
  /**
   * fp32, int8 (CPU only), fp16 (GPU providers only), or auto: int8 where the CPU and a quality-checked int8
   * variant allow it, fp16 on a GPU where the model's fp16 variant was measured close enough. Default auto.
   */
  precision?: PrecisionRequest;
  /** The CPU's int8 instructions; default: detected (tests inject a CPU without them). */
  cpu?: CpuFeatures;
  /** Folders searched for int8 variants after the fp32 file's own folder; default: the int8 cache. */
  int8Dirs?: string[];
  /** Folders searched for fp16 manifests after the fp32 file's own folder; default: the fp16 cache. */
  fp16Dirs?: string[];
  /**
   * Default true: a model whose graph can take 8-bit ends (onnx/byteIo.ts) is loaded with them and offers
   * runBytes. false runs every model on float tensors only (tests and benches compare the two paths).
   */
  byteIo?: boolean;
}

export interface TensorResult {
  data: Float32Array;
  /** [N, C, H, W] */
  dims: readonly [number, number, number, number];
}

/** What runBytes answers: 8-bit RGB, interleaved rows. */
export interface ByteTensorResult {
  data: Uint8Array;
  /** [N, H, W, 3] */
  dims: readonly [number, number, number, number];
}

export interface ModelSession {
  readonly model: ResolvedModel;
  /** The provider that actually runs the model now (auto may have fallen back to cpu). */
  readonly provider: ExecutionProvider;
  /** Native upscale factor of the model. */
  readonly scale: number;
  /** The precision the model runs at now (int8 only on the CPU provider, fp16 only on GPU providers). */
  readonly precision?: Precision;
  /** Runs NCHW float32 RGB (0..1) of shape [n,3,h,w]; answers [n,3,h·scale,w·scale] (not clamped). */
  run(input: Float32Array, n: number, h: number, w: number): Promise<TensorResult>;
  /**
   * Present when the model was loaded with 8-bit ends (onnx/byteIo.ts): runs uint8 RGB rows [1,h,w,3] and answers
   * [1,h·scale,w·scale,3], clamped and rounded inside the graph. `run` then loads the plain graph on first use
   * (16-bit images, alpha planes), a second session of the same model.
   */
  runBytes?(input: Uint8Array, h: number, w: number): Promise<ByteTensorResult>;
}

/** A graph with named float32 outputs (face detector, face restorer): not an upscaler, so no scale check. */
export interface GraphSession {
  readonly provider: ExecutionProvider;
  /** Runs the first input with `dims`; answers every float32 output by name. */
  run(
    input: Float32Array,
    dims: readonly number[],
  ): Promise<Map<string, { data: Float32Array; dims: readonly number[] }>>;
}

export interface Inference {
  readonly requested: ExecutionProviderRequest;
  /** A session for any ONNX file by path (same provider choice and cache as session()). */
  graph(file: string): Promise<GraphSession>;
  /**
   * The session for a model, created once per (model file, provider) and reused. With `auto` and the job's
   * work, a job too small to pay a cold GPU's start-up runs on the CPU (autoProvider.ts).
   */
  session(model: ResolvedModel, work?: JobWork): Promise<ModelSession>;
  /** This Inference seen by one job: its session() weighs that job's work and remembers why it chose. */
  forJob(work: JobWork | undefined): JobInference;
  /** Disposes every session; later session() calls create new ones. */
  release(): Promise<void>;
}

export interface JobInference extends Inference {
  /** Why the job's session for `model` runs on its provider (one sentence), once session() has answered. */
  providerReason(model: ResolvedModel): string | undefined;
}

/** The catalog's provider-unavailable row, naming the provider that failed. */
export class InferenceProviderError extends CrispError {
  override readonly name = 'InferenceProviderError';
  constructor(
    readonly provider: ExecutionProvider,
    cause: unknown,
  ) {
    super(
      'provider-unavailable',
      `The '${provider}' execution provider could not run the model: ${messageOf(cause)}. Choose the cpu or auto execution provider instead.`,
    );
  }
}

function messageOf(e: unknown): string {
  const m = e instanceof Error ? e.message : String(e);
  // onnxruntime prefixes messages with a source location and the failed check; keep the human part.
  const last =
    m
      .split('\n')
      .map((l) => l.trim())
      .filter(Boolean)
      .pop() ?? m;
  return last.replace(/^\/onnxruntime_src\/.*? was false\.\s*/, '');
}

function providerLibExists(name: string): boolean {
  try {
    const require = createRequire(import.meta.url);
    const bin = path.join(path.dirname(require.resolve('onnxruntime-node')), '..', 'bin');
    const file =
      process.platform === 'win32' ? `onnxruntime_providers_${name}.dll` : `libonnxruntime_providers_${name}.so`;
    for (const napi of readdirSync(bin)) {
      if (existsSync(path.join(bin, napi, process.platform, process.arch, file))) return true;
    }
  } catch {
    // No bin directory to look in: the provider is not there.
  }
  return false;
}

/**
 * WebGPU on Linux runs on Vulkan. Without a Vulkan loader, trying it only makes Dawn print a native
 * warning on every start, so auto skips it (an explicit --ep webgpu still tries and reports why).
 */
function vulkanLoaderPresent(): boolean {
  const dirs = [
    ...(process.env.LD_LIBRARY_PATH ?? '').split(':').filter(Boolean),
    `/usr/lib/${process.arch === 'arm64' ? 'aarch64' : 'x86_64'}-linux-gnu`,
    '/usr/lib64',
    '/usr/lib',
    '/usr/local/lib',
  ];
  return dirs.some((d) => existsSync(path.join(d, 'libvulkan.so.1')));
}

/** GPU providers worth trying on this platform, best first; cpu is always the last resort. */
export function autoProviders(
  platform: NodeJS.Platform = process.platform,
  hasVulkan = platform === 'linux' && vulkanLoaderPresent(),
): ExecutionProvider[] {
  const built = new Set(ort.listSupportedBackends().map((b) => b.name));
  const order: ExecutionProvider[] = [];
  if (built.has('webgpu') && (platform !== 'linux' || hasVulkan)) order.push('webgpu');
  // cuda ships separately from the npm package ("bundled: false"); only try it when its library is present.
  if ((platform === 'linux' || platform === 'win32') && built.has('cuda') && providerLibExists('cuda'))
    order.push('cuda');
  if (platform === 'win32' && built.has('dml')) order.push('dml');
  if (platform === 'darwin' && built.has('coreml')) order.push('coreml');
  order.push('cpu');
  return order;
}

/** A session's ends: the model's own float32 NCHW, or the 8-bit NHWC ends of onnx/byteIo.ts. */
type GraphIo = 'float' | 'bytes';

export function createInference(opts: InferenceOptions): Inference {
  const log = opts.log ?? ((m: string) => console.warn(m));
  const requested = opts.executionProvider;
  const precision = opts.precision ?? 'auto';
  const cpu = opts.cpu ?? cpuFeatures();
  const int8Dirs = opts.int8Dirs ?? [int8CacheDir()];
  const fp16Dirs = opts.fp16Dirs ?? [fp16CacheDir()];
  /** Notices already given, so a batch says each thing once. */
  const told = new Set<string>();
  const raw = new Map<string, Promise<ort.InferenceSession>>();
  const byteIoRule = new Map<string, Promise<boolean>>();
  const wrapped = new Map<string, Promise<ModelSession>>();
  /** Providers that failed once; auto does not try them again in this Inference. */
  const broken = new Set<ExecutionProvider>();

  function sessionOptions(provider: ExecutionProvider): ort.InferenceSession.SessionOptions {
    return {
      executionProviders: [provider],
      graphOptimizationLevel: 'all',
      // Errors reach us as exceptions; onnxruntime's own warnings would only be noise on the console.
      logSeverityLevel: 3,
      // One graph runs at a time (the queue serialises jobs), so inter-op threads would only compete with intra-op ones.
      ...(provider === 'cpu' ? { executionMode: 'sequential' as const, interOpNumThreads: 1 } : {}),
      ...(provider === 'cpu' && opts.threads ? { intraOpNumThreads: opts.threads } : {}),
    };
  }

  /** The file a provider loads for a model (its int8 variant on a CPU that benefits), with the notice if any. */
  async function fileFor(
    model: ResolvedModel,
    provider: ExecutionProvider,
  ): Promise<{ file: string; precision: Precision; notice?: string; bytes?: Uint8Array }> {
    if (precision === 'fp32') return { file: model.path, precision: 'fp32' };
    let variant: Int8Variant | undefined;
    if (provider === 'cpu' && cpu.int8Dot.length > 0)
      variant = await findInt8Variant(model.path, int8Dirs).catch(() => undefined);
    // GPU providers: the fp16 graph is built from the fp32 file (ms) when it is measured or asked for.
    let fp16: { bytes: Uint8Array; manifest?: Fp16Manifest } | undefined;
    if (provider !== 'cpu' && (precision === 'fp16' || precision === 'auto')) {
      const manifest = await findFp16Manifest(model.path, fp16Dirs).catch(() => undefined);
      if (manifest || precision === 'fp16') fp16 = await buildFp16(model.path, manifest).catch(() => undefined);
    }
    const choice = choosePrecision({
      requested: precision,
      provider,
      cpu,
      variant,
      fp16: fp16?.manifest,
      model: model.entry.model,
      name: model.entry.name,
    });
    const bytes = choice.precision === 'fp16' ? fp16?.bytes : undefined;
    if (choice.precision === 'fp16' && !bytes)
      throw new Error(`the fp16 graph of ${model.entry.model} could not be built`);
    return {
      file: choice.variant?.path ?? model.path,
      precision: choice.precision,
      ...(choice.notice ? { notice: choice.notice } : {}),
      ...(bytes ? { bytes } : {}),
    };
  }

  function tell(notice: string | undefined): void {
    if (!notice || told.has(notice)) return;
    told.add(notice);
    log(notice);
  }

  /**
   * The graph the CPU provider runs: PReLU rewritten as the branch-free Mul + Max (same numbers, 1.1× faster
   * fp32 on real images; preluRewrite.ts). int8 variants were rewritten when they were built. Anything the
   * rewrite does not apply to (no PReLU, a graph our reader cannot parse, weights in external data files)
   * is loaded from its path as before.
   */
  async function cpuGraph(file: string): Promise<Uint8Array | string> {
    try {
      const r = branchlessPrelu(new Uint8Array(await readFile(file)));
      return r.rewritten > 0 ? r.bytes : file;
    } catch {
      return file;
    }
  }

  /**
   * The graph a session loads: `built` (in-memory bytes built from `file`: its fp16 graph) or the CPU's rewrite
   * (cpuGraph) or the file itself, given 8-bit ends when `io` is 'bytes'.
   */
  async function graphFor(
    file: string,
    provider: ExecutionProvider,
    io: GraphIo,
    built?: Uint8Array,
  ): Promise<Uint8Array | string> {
    const graph = built ?? (provider === 'cpu' ? await cpuGraph(file) : file);
    if (io === 'float') return graph;
    return withByteIo(typeof graph === 'string' ? new Uint8Array(await readFile(graph)) : graph);
  }

  /**
   * Whether a model loads with 8-bit ends: the one rule of onnx/byteIo.ts, judged on its fp32 file once (its int8,
   * fp16 and other variants keep its inputs and outputs).
   */
  function takesBytes(file: string): Promise<boolean> {
    if (opts.byteIo === false) return Promise.resolve(false);
    let p = byteIoRule.get(file);
    if (!p) {
      // A file our reader cannot parse stays on the float path (onnxruntime then says what is wrong with it).
      p = readFile(file)
        .then((b) => byteIoRefusal(readOnnx(new Uint8Array(b))) === undefined)
        .catch(() => false);
      byteIoRule.set(file, p);
    }
    return p;
  }

  function rawSession(
    file: string,
    provider: ExecutionProvider,
    io: GraphIo,
    built?: Uint8Array,
  ): Promise<ort.InferenceSession> {
    const key = `${file}\u0000${provider}\u0000${io}${built ? '\u0000fp16' : ''}`;
    let s = raw.get(key);
    if (!s) {
      // (Two calls: onnxruntime's overloads take a path or bytes, not their union.)
      s = graphFor(file, provider, io, built).then((graph) =>
        typeof graph === 'string'
          ? ort.InferenceSession.create(graph, sessionOptions(provider))
          : ort.InferenceSession.create(graph, sessionOptions(provider)),
      );
      // A failed creation must not stay cached, or a retry could never succeed.
      s.catch(() => raw.delete(key));
      raw.set(key, s);
    }
    return s;
  }

  /** Why each broken provider failed, for the result's reason. */
  const brokenWhy = new Map<ExecutionProvider, string>();
  function markBroken(provider: ExecutionProvider, e: unknown): void {
    if (broken.has(provider)) return;
    broken.add(provider);
    brokenWhy.set(provider, messageOf(e));
    log(`Crisp: the '${provider}' execution provider is unavailable (${messageOf(e)}); falling back.`);
  }

  interface Opened {
    session: ort.InferenceSession;
    provider: ExecutionProvider;
    precision: Precision;
    io: GraphIo;
  }

  async function openOn(model: ResolvedModel, provider: ExecutionProvider, io: GraphIo = 'float'): Promise<Opened> {
    const f = await fileFor(model, provider);
    let session: ort.InferenceSession;
    try {
      session = await rawSession(f.file, provider, io, f.bytes);
    } catch (e) {
      // auto's fp16 graph that this GPU cannot load (no shader-f16, an op without an fp16 kernel) runs fp32 on the
      // same GPU rather than costing the GPU altogether; an explicit --precision fp16 fails as asked.
      if (!f.bytes || precision === 'fp16') throw e;
      tell(`Crisp: ${provider} could not load ${model.entry.model} in fp16 (${messageOf(e)}); running it in fp32.`);
      return { session: await rawSession(model.path, provider, io), provider, precision: 'fp32', io };
    }
    tell(f.notice);
    return { session, provider, precision: f.precision, io };
  }

  async function open(model: ResolvedModel, io: GraphIo = 'float', only?: ExecutionProvider): Promise<Opened> {
    if (only) return openOn(model, only, io);
    if (requested !== 'auto') {
      try {
        return await openOn(model, requested, io);
      } catch (e) {
        throw new InferenceProviderError(requested, e);
      }
    }
    let last: unknown;
    for (const provider of opts.candidates ?? autoProviders()) {
      if (broken.has(provider)) continue;
      try {
        return await openOn(model, provider, io);
      } catch (e) {
        last = e;
        if (provider === 'cpu') break;
        markBroken(provider, e);
      }
    }
    throw new InferenceProviderError('cpu', last);
  }

  /**
   * Runs `exec` on the holder's session. A GPU provider can load yet fail on a real graph (memory, an
   * unsupported op): with `auto` the provider is marked broken and the call is retried once on cpu, and
   * the holder keeps the cpu session for later calls.
   */
  async function withCpuFallback<T>(
    model: ResolvedModel,
    holder: { current: Opened },
    exec: () => Promise<T>,
  ): Promise<T> {
    try {
      return await exec();
    } catch (e) {
      if (requested !== 'auto' || holder.current.provider === 'cpu') {
        if (requested !== 'auto' && requested !== 'cpu') throw new InferenceProviderError(requested, e);
        throw e;
      }
      markBroken(holder.current.provider, e);
      holder.current = await openOn(model, 'cpu', holder.current.io);
      return exec();
    }
  }

  async function makeSession(model: ResolvedModel, only?: ExecutionProvider): Promise<ModelSession> {
    const bytes = await takesBytes(model.path);
    const holder = { current: await open(model, bytes ? 'bytes' : 'float', only) };
    // With 8-bit ends, the plain graph is opened only when a float run is asked for (16-bit images, alpha).
    let floatOpen: Promise<{ current: Opened }> | undefined = bytes ? undefined : Promise.resolve(holder);
    const floatHolder = (): Promise<{ current: Opened }> => {
      if (!floatOpen) {
        const opening = open(model, 'float', only).then((current) => ({ current }));
        opening.catch(() => (floatOpen = undefined));
        floatOpen = opening;
      }
      return floatOpen;
    };
    const run = async (input: Float32Array, n: number, h: number, w: number): Promise<TensorResult> => {
      const fh = await floatHolder();
      const exec = async (): Promise<TensorResult> => {
        const s = fh.current.session;
        const feeds = { [s.inputNames[0] ?? 'input']: new ort.Tensor('float32', input, [n, 3, h, w]) };
        const out = await s.run(feeds);
        const t = out[s.outputNames[0] ?? 'output'];
        if (!t || t.type !== 'float32' || t.dims.length !== 4)
          throw new Error('The model returned an unexpected output');
        const [on = 0, oc = 0, oh = 0, ow = 0] = t.dims;
        return { data: t.data as Float32Array, dims: [on, oc, oh, ow] };
      };
      return withCpuFallback(model, fh, exec);
    };
    const runBytes = (input: Uint8Array, h: number, w: number): Promise<ByteTensorResult> =>
      withCpuFallback(model, holder, async () => {
        const out = await holder.current.session.run({ [BYTE_INPUT]: new ort.Tensor('uint8', input, [1, h, w, 3]) });
        const t = out[BYTE_OUTPUT];
        if (!t || t.type !== 'uint8' || t.dims.length !== 4) throw new Error('The model returned an unexpected output');
        const [on = 0, oh = 0, ow = 0, oc = 0] = t.dims;
        return { data: t.data as Uint8Array, dims: [on, oh, ow, oc] };
      });
    return {
      ...(bytes ? { runBytes } : {}),
      model,
      get provider() {
        return holder.current.provider;
      },
      scale: model.entry.scale,
      get precision() {
        return holder.current.precision;
      },
      run,
    };
  }

  /** Per model file: seconds earlier small jobs would have saved on a warm GPU (autoProvider.ts). */
  const forgone = new Map<string, number>();
  const cpuThreads = opts.threads ?? os.availableParallelism();

  function cachedSession(model: ResolvedModel, only?: ExecutionProvider): Promise<ModelSession> {
    // auto's GPU-first session and its CPU-only one for small jobs are cached apart.
    const key = only ? `${model.path}\u0000${only}` : model.path;
    let s = wrapped.get(key);
    if (!s) {
      s = makeSession(model, only);
      s.catch(() => wrapped.delete(key));
      wrapped.set(key, s);
    }
    return s;
  }

  interface Chosen {
    session: ModelSession;
    /** The provider the choice named (the session may have fallen back from it). */
    chosen: ExecutionProvider;
    reason: string;
  }

  async function chosenSession(model: ResolvedModel, work: JobWork | undefined): Promise<Chosen> {
    if (requested !== 'auto') {
      const session = await cachedSession(model);
      return { session, chosen: requested, reason: `${requested}: the execution provider asked for.` };
    }
    // A GPU session already made for this model is warm: its start-up is paid. (One being made is waited for: the
    // job would take it anyway, and if it fell back to the CPU every GPU has failed and is out of the candidates.)
    const existing = await wrapped.get(model.path)?.catch(() => undefined);
    const warm = new Set<ExecutionProvider>(existing && existing.provider !== 'cpu' ? [existing.provider] : []);
    const candidates = (opts.candidates ?? autoProviders()).filter((p) => !broken.has(p));
    const gpu = candidates.find((p) => p !== 'cpu');
    const choice = chooseAutoProvider({
      candidates,
      warm,
      work,
      cpuThreads,
      forgoneSeconds: forgone.get(model.path) ?? 0,
    });
    if (choice.provider === 'cpu' && gpu) {
      forgone.set(model.path, (forgone.get(model.path) ?? 0) + (choice.forgone ?? 0));
      return { session: await cachedSession(model, 'cpu'), chosen: 'cpu', reason: choice.reason };
    }
    return { session: await cachedSession(model), chosen: choice.provider, reason: choice.reason };
  }

  /** The reason for the provider the session runs on now: a GPU that failed mid-job left it on the CPU. */
  function reasonNow(c: Chosen): string {
    if (c.session.provider === c.chosen) return c.reason;
    const failed = brokenWhy.get(c.chosen);
    return `${c.session.provider}: ${c.chosen} could not run the model${failed ? ` (${failed})` : ''}, so auto fell back.`;
  }

  function forJob(work: JobWork | undefined): JobInference {
    const chosen = new Map<string, Chosen>();
    return {
      requested,
      graph: (file) => self.graph(file),
      async session(model) {
        const c = await chosenSession(model, work);
        chosen.set(model.path, c);
        return c.session;
      },
      forJob,
      release: () => self.release(),
      providerReason: (model) => {
        const c = chosen.get(model.path);
        return c ? reasonNow(c) : undefined;
      },
    };
  }

  const graphs = new Map<string, Promise<GraphSession>>();
  async function makeGraph(file: string): Promise<GraphSession> {
    const model: ResolvedModel = {
      path: file,
      entry: {
        name: 'custom:graph',
        title: file,
        model: path.basename(file),
        architecture: 'graph',
        scale: 1,
        kind: 'custom',
      },
    };
    const holder = { current: await open(model) };
    const exec = async (input: Float32Array, dims: readonly number[]) => {
      const s = holder.current.session;
      const out = await s.run({ [s.inputNames[0] ?? 'input']: new ort.Tensor('float32', input, [...dims]) });
      const res = new Map<string, { data: Float32Array; dims: readonly number[] }>();
      for (const name of s.outputNames) {
        const t = out[name];
        if (t && t.type === 'float32') res.set(name, { data: t.data as Float32Array, dims: [...t.dims] });
      }
      return res;
    };
    return {
      get provider() {
        return holder.current.provider;
      },
      run: (input, dims) => withCpuFallback(model, holder, () => exec(input, dims)),
    };
  }

  const self: Inference = {
    requested,
    graph(file) {
      let g = graphs.get(file);
      if (!g) {
        g = makeGraph(file);
        g.catch(() => graphs.delete(file));
        graphs.set(file, g);
      }
      return g;
    },
    session: (model, work) => chosenSession(model, work).then((c) => c.session),
    forJob,
    async release() {
      const all = [...raw.values()];
      raw.clear();
      wrapped.clear();
      graphs.clear();
      forgone.clear();
      await Promise.all(all.map(async (p) => (await p.catch(() => undefined))?.release()));
    },
  };
  return self;
}

/**
 * One-off run of an in-memory ONNX model on the CPU (model install smoke tests): keeps onnxruntime behind
 * this module for callers whose model is not a catalog file yet. The session is released afterwards.
 */
export async function runModelBytes(
  onnx: Uint8Array,
  input: Float32Array,
  dims: readonly number[],
): Promise<{ dims: readonly number[]; data: Float32Array }> {
  const s = await ort.InferenceSession.create(onnx, { executionProviders: ['cpu'], logSeverityLevel: 3 });
  try {
    const out = await s.run({ [s.inputNames[0] ?? 'input']: new ort.Tensor('float32', input, [...dims]) });
    const t = out[s.outputNames[0] ?? 'output'];
    if (!t || t.type !== 'float32') throw new Error('The model returned no float32 output');
    return { dims: [...t.dims], data: t.data as Float32Array };
  } finally {
    await s.release();
  }
}
