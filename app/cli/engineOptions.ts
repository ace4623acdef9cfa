/**
 * Options `crisp upscale` and `crisp batch` share: where and how the local engine runs, and which
 * service to use instead. Declared and validated once so both commands spell and check them alike.
 */
import type { Command } from 'commander';
import { EXECUTION_PROVIDERS, PRECISIONS, type ExecutionProviderChoice, type PrecisionRequest } from '../../engine/inference/index.js';
import { FaceModelMissingError, resolveFaceModel } from '../../engine/faces/faceModels.js';
import { CliError } from './cliError.js';

export interface EngineFlags {
  tile?: string;
  ep: string;
  threads?: string;
  precision?: string;
  remote?: string;
  apiKeyFile?: string;
  face?: boolean;
  faceModel?: string;
  faceStrength?: string;
}

export interface EngineChoice {
  executionProvider: ExecutionProviderChoice;
  tileSize: number | undefined;
  threads: number | undefined;
  precision: PrecisionRequest;
}

export function addEngineOptions(command: Command): Command {
  return command
    .option('--tile <n>', 'local: tile size in input pixels (default: automatic)')
    .option('--ep <provider>', `local: execution provider: ${EXECUTION_PROVIDERS.join('|')}`, 'auto')
    .option('--threads <n>', 'local: CPU threads for inference')
    .option('--precision <p>', `local: ${PRECISIONS.join('|')} (int8: CPU only, needs "crisp models quantize")`, 'auto')
    .option('--remote <url>', 'upscale through the service at this base URL instead of locally')
    .option('--api-key-file <file>', 'with --remote: file holding the API key (default: $CRISP_API_KEY)')
    .option('--face', 'enhance faces (detect, restore with a face model, paste back)')
    .option('--face-model <name>', 'local: face model (gfpgan-1.4, gfpgan-1.3 or custom:NAME; implies --face); default: the best installed one')
    .option('--face-strength <0-1>', 'local: share of the restored face in the blend (implies --face)', undefined);
}

export interface FaceChoice {
  /** The task's enhanceFace. */
  enhance: boolean;
  /** For a local engine: the resolved face model and strength (absent when faces are off or remote). */
  local?: { model: string; strength: number };
}

/**
 * --face / --face-model / --face-strength. Locally, a missing face model is refused here, before any work,
 * with the two ways to get one; with --remote the service decides (it answers 400 when it has none).
 */
export function parseFaceFlags(opts: EngineFlags, modelDirs: readonly string[]): FaceChoice {
  let strength = 1;
  if (opts.faceStrength !== undefined) {
    strength = Number(opts.faceStrength);
    if (opts.faceStrength.trim() === '' || !Number.isFinite(strength) || strength < 0 || strength > 1) throw new CliError('--face-strength must be a number from 0 to 1');
  }
  const enhance = Boolean(opts.face) || opts.faceModel !== undefined || opts.faceStrength !== undefined;
  if (!enhance || opts.remote) return { enhance };
  try {
    return { enhance, local: { model: resolveFaceModel(opts.faceModel, modelDirs).name, strength } };
  } catch (e) {
    if (e instanceof FaceModelMissingError) throw new CliError(e.message);
    throw e;
  }
}

export function positiveInt(name: string, value: string | undefined, max: number): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1 || n > max) throw new CliError(`--${name} must be an integer from 1 to ${max}`);
  return n;
}

export function parseEngineFlags(opts: EngineFlags): EngineChoice {
  const executionProvider = EXECUTION_PROVIDERS.find((p) => p === opts.ep);
  if (!executionProvider) throw new CliError(`--ep must be one of ${EXECUTION_PROVIDERS.join(', ')}`);
  const precision = PRECISIONS.find((p) => p === (opts.precision ?? 'auto'));
  if (!precision) throw new CliError(`--precision must be one of ${PRECISIONS.join(', ')}`);
  return { executionProvider, tileSize: positiveInt('tile', opts.tile, 4096), threads: positiveInt('threads', opts.threads, 256), precision };
}
