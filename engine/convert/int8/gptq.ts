/**
 * Error-compensating weight rounding (GPTQ, Frantar et al. 2022) for int8 convolutions.
 *
 * Rounding each weight to the nearest int8 step independently is not enough for these SR networks: their
 * 3×3 kernels are heavy-tailed (one tap is often 10–24× the RMS of the others), so a per-channel step set
 * by the largest tap rounds the small ones coarsely and the errors add up over 16–32 layers. GPTQ rounds
 * one input column at a time and pushes each rounding error onto the not-yet-rounded columns, weighted by
 * how the layer's real inputs correlate (the Hessian H = Σ x xᵀ of im2col patches from calibration), so
 * the layer's output — not its weights — stays close to fp32.
 */

/** Accumulates H = Σ v vᵀ over im2col patches v (length C·kh·kw) sampled from a conv's input activations. */
export class ConvHessian {
  readonly dim: number;
  readonly h: Float64Array;
  samples = 0;
  private seed = 1;

  constructor(
    readonly channels: number,
    readonly kh: number,
    readonly kw: number,
    /** [top, left] zero padding, as the conv applies it. */
    readonly pad: readonly [number, number],
  ) {
    this.dim = channels * kh * kw;
    this.h = new Float64Array(this.dim * this.dim);
  }

  private rand(): number {
    // xorshift32: deterministic sampling so a quantized model is reproducible.
    let x = this.seed;
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    this.seed = x >>> 0;
    return this.seed / 4294967296;
  }

  /** Adds `count` random patches of one [C,h,w] activation. */
  add(x: Float32Array, height: number, width: number, count: number): void {
    const { channels, kh, kw, dim } = this;
    const v = new Float64Array(dim);
    const plane = height * width;
    for (let s = 0; s < count; s++) {
      const py = Math.floor(this.rand() * height);
      const px = Math.floor(this.rand() * width);
      let k = 0;
      for (let c = 0; c < channels; c++) {
        for (let dy = 0; dy < kh; dy++) {
          const y = py + dy - this.pad[0];
          for (let dx = 0; dx < kw; dx++, k++) {
            const xx = px + dx - this.pad[1];
            v[k] = y >= 0 && y < height && xx >= 0 && xx < width ? x[c * plane + y * width + xx]! : 0;
          }
        }
      }
      // Upper triangle only; mirrored in gptqQuantize.
      for (let i = 0; i < dim; i++) {
        const vi = v[i]!;
        if (vi === 0) continue;
        const row = i * dim;
        for (let j = i; j < dim; j++) this.h[row + j]! += vi * v[j]!;
      }
      this.samples++;
    }
  }
}

/** In-place lower Cholesky factor of a symmetric positive-definite n×n matrix; false when not positive definite. */
function cholesky(a: Float64Array, n: number): boolean {
  for (let j = 0; j < n; j++) {
    let d = a[j * n + j]!;
    for (let k = 0; k < j; k++) d -= a[j * n + k]! ** 2;
    if (!(d > 0)) return false;
    d = Math.sqrt(d);
    a[j * n + j] = d;
    for (let i = j + 1; i < n; i++) {
      let s = a[i * n + j]!;
      for (let k = 0; k < j; k++) s -= a[i * n + k]! * a[j * n + k]!;
      a[i * n + j] = s / d;
    }
    for (let k = j + 1; k < n; k++) a[j * n + k] = 0;
  }
  return true;
}

/** Upper-triangular U with H⁻¹ = Uᵀ U (GPTQ's "Cholesky of the inverse Hessian"). */
function inverseCholeskyUpper(h: Float64Array, n: number): Float64Array | undefined {
  const l = Float64Array.from(h);
  if (!cholesky(l, n)) return undefined;
  // Linv = L⁻¹ (lower), by forward substitution column by column.
  const linv = new Float64Array(n * n);
  for (let j = 0; j < n; j++) {
    linv[j * n + j] = 1 / l[j * n + j]!;
    for (let i = j + 1; i < n; i++) {
      let s = 0;
      for (let k = j; k < i; k++) s += l[i * n + k]! * linv[k * n + j]!;
      linv[i * n + j] = -s / l[i * n + i]!;
    }
  }
  // H⁻¹ = Linvᵀ Linv, then its lower Cholesky factor M; U = Mᵀ.
  const hinv = new Float64Array(n * n);
  for (let i = 0; i < n; i++) {
    for (let j = 0; j <= i; j++) {
      let s = 0;
      for (let k = i; k < n; k++) s += linv[k * n + i]! * linv[k * n + j]!;
      hinv[i * n + j] = s;
      hinv[j * n + i] = s;
    }
  }
  if (!cholesky(hinv, n)) return undefined;
  const u = new Float64Array(n * n);
  for (let i = 0; i < n; i++) for (let j = 0; j <= i; j++) u[j * n + i] = hinv[i * n + j]!;
  return u;
}

/**
 * int8 weights [O, D] (D = C·kh·kw, PyTorch/ONNX layout) with the given per-row scales, rounded by GPTQ
 * against the Hessian. Falls back to nearest rounding when the Hessian is unusable (no samples).
 */
export function gptqQuantize(
  weights: Float32Array,
  outChannels: number,
  scales: Float32Array,
  hessian: ConvHessian,
  dampFraction = 0.01,
): Int8Array {
  const n = hessian.dim;
  const q = new Int8Array(weights.length);
  const nearest = () => {
    for (let o = 0; o < outChannels; o++)
      for (let i = 0; i < n; i++)
        q[o * n + i] = Math.max(-127, Math.min(127, Math.round(weights[o * n + i]! / scales[o]!)));
    return q;
  };
  if (hessian.samples === 0 || weights.length !== outChannels * n) return nearest();
  const h = new Float64Array(n * n);
  for (let i = 0; i < n; i++)
    for (let j = i; j < n; j++) h[i * n + j] = h[j * n + i] = hessian.h[i * n + j]! / hessian.samples;
  const w = Float64Array.from(weights);
  let meanDiag = 0;
  for (let i = 0; i < n; i++) meanDiag += h[i * n + i]!;
  meanDiag /= n;
  for (let i = 0; i < n; i++) {
    // An input that was always zero carries no information: its weight is irrelevant, keep it out of H.
    if (h[i * n + i] === 0) {
      h[i * n + i] = 1;
      for (let o = 0; o < outChannels; o++) w[o * n + i] = 0;
    }
    h[i * n + i]! += dampFraction * (meanDiag || 1);
  }
  const u = inverseCholeskyUpper(h, n);
  if (!u) return nearest();
  for (let i = 0; i < n; i++) {
    const d = u[i * n + i]!;
    for (let o = 0; o < outChannels; o++) {
      const row = o * n;
      const s = scales[o]!;
      const wi = w[row + i]!;
      const qi = Math.max(-127, Math.min(127, Math.round(wi / s)));
      q[row + i] = qi;
      const err = (wi - qi * s) / d;
      if (err === 0) continue;
      for (let j = i + 1; j < n; j++) w[row + j]! -= err * u[i * n + j]!;
    }
  }
  return q;
}
