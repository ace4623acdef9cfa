/**
 * The one result shape of a run, whatever ran it (local engine or a service, `crisp upscale` or
 * `crisp batch`): what `--json` prints. Every key is always present (null when it does not apply), so
 * scripts read local and remote results alike. Documented in `crisp help upscale` and README.
 */
import type { DeviceUsed, ItemStatus, JobItem } from '../service/crispService.js';
import type { CrispError } from '../../engine/contract/index.js';

export interface JobErrorView {
  /** Stable: see ERROR_CODES in app/jobs/userErrors.ts. */
  code: string;
  message: string;
}

export interface JobResult {
  input: string;
  status: ItemStatus;
  output: string | null;
  width: number | null;
  height: number | null;
  fileSize: number | null;
  /** 0 on this computer. */
  creditsDeducted: number;
  warnings: string[];
  /** With --face: faces found and enhanced in this image; null without --face or when the service does not say. */
  faces: { found: number; enhanced: number } | null;
  /** On this computer: the execution provider that ran the model (auto may have fallen back) and its precision. */
  device: DeviceUsed | null;
  error: JobErrorView | null;
}

export interface JobReport {
  /** The model the run used (the default resolved, a bare imported name as custom:<name>); null if it never started. */
  model: string | null;
  results: JobResult[];
  upscaled: number;
  failed: number;
  skipped: number;
  cancelled: number;
  creditsDeducted: number;
  /** Why the whole run could not start (bad option, unusable output folder…); null otherwise. */
  error: JobErrorView | null;
}

export function jobResult(item: JobItem): JobResult {
  return {
    input: item.inputPath,
    status: item.status,
    output: item.outputPath ?? null,
    width: item.outputDimensions?.width ?? null,
    height: item.outputDimensions?.height ?? null,
    fileSize: item.fileSize ?? null,
    creditsDeducted: item.creditsDeducted ?? 0,
    warnings: item.warnings ?? [],
    faces: item.faces ?? null,
    device: item.device ?? null,
    error:
      item.status === 'failed'
        ? { code: item.errorCode ?? 'internal', message: item.error ?? 'Upscaling failed.' }
        : null,
  };
}

export function jobReport(model: string | null, items: readonly JobItem[], runError?: CrispError): JobReport {
  const results = items.map(jobResult);
  const count = (s: ItemStatus) => results.filter((r) => r.status === s).length;
  return {
    model,
    results,
    upscaled: count('done'),
    failed: count('failed'),
    skipped: count('skipped'),
    cancelled: count('cancelled'),
    creditsDeducted: results.reduce((a, r) => a + r.creditsDeducted, 0),
    error: runError ? { code: runError.code, message: runError.message } : null,
  };
}
