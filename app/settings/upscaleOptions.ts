/**
 * The one declaration of upscale options: each option's type, range or choices, default and help text.
 * Everything else is derived from this table — the `Settings` type and the settings file's validation
 * (settingsSchema.ts), the IPC / `crisp ui` payload checks (app/service/serviceArgs.ts), the CLI flags of both
 * `crisp upscale` and `crisp batch` (app/cli/optionFlags.ts) and the UI controls' min/max/choices
 * (`optionControl`). A new option is added here and nowhere else. The engine options `crisp serve` and
 * `crisp worker` share with an upscale (face model and strength, threads, execution provider) are these
 * same entries (app/cli/processOptions.ts), so each flag is spelled, ranged and checked once.
 *
 * Plain data (no zod, no Node): the renderer may import it, and `crisp --help` loads it without zod. The
 * zod schemas derived from it are in optionSchemas.ts.
 */
import {
  COMPRESSION_MAX,
  COMPRESSION_MIN,
  DENOISE_MODEL,
  FORMAT_MAX_SIDE,
  OUTPUT_FORMATS,
  SCALES,
  type SaveImageAs,
  type Scale,
} from '../../engine/contract/enums.js';
import { EXECUTION_PROVIDERS, PRECISIONS, type PrecisionRequest } from '../../engine/core/inference/providers.js';
import { METADATA_POLICIES, type MetadataPolicy } from '../../engine/core/pipeline/metadataPolicy.js';
import { resolveModelName } from '../../engine/core/models/modelNames.js';
import { DEFAULT_TEMPLATE, TEMPLATE_TOKENS, templateProblem } from '../../engine/service/tasks/outputNames.js';

/** How an option is spelled on the command line. */
export interface CliSpelling {
  /** e.g. `-s, --scale`. */
  flags: string;
  /** What `--help` shows instead of the declared default (e.g. when the CLI picks one at run time). */
  defaultText?: string;
  /** The CLI leaves the option unset unless it is given (the declared default is the settings file's). */
  unsetByDefault?: boolean;
  /** Without the flag, the value comes from this environment variable (checked like the flag) before the default. */
  env?: string;
  /** The flag takes one or more values (`--models-dir a b`); each is checked on its own. */
  variadic?: boolean;
}

interface Common<T> {
  default: T;
  help: string;
  cli: CliSpelling;
  /** Only the engine on this computer uses it (`crisp upscale --remote` ignores it): its help says "local:". */
  localOnly?: boolean;
}

export type OptionSpec =
  | (Common<number | null> & {
      kind: 'int';
      min: number;
      max: number;
      nullable: boolean;
      unit?: string;
      /** How the CLI shows the value (`<bytes>`), where the range would say little (`<1-9007199254740991>`). */
      valueName?: string;
    })
  | (Common<number> & { kind: 'number'; min: number; max: number; step: number })
  | (Common<string> & { kind: 'choice'; choices: readonly string[]; aliases?: Readonly<Record<string, string>> })
  | (Common<boolean> & { kind: 'flag' })
  | (Common<string | null> & {
      kind: 'text';
      maxLength: number;
      nullable: boolean;
      valueName: string;
      check?: (v: string) => string | undefined;
    });

/** `T` narrows the value type (Scale, SaveImageAs…); the spec is what the derived schema checks at run time. */
export type Spec<T> = OptionSpec & { readonly __type?: T };
export const int = <T extends number | null = number>(
  s: Omit<Extract<OptionSpec, { kind: 'int' }>, 'kind' | 'nullable'> & { nullable?: boolean },
): Spec<T> => ({ kind: 'int', nullable: false, ...s });
export const num = (s: Omit<Extract<OptionSpec, { kind: 'number' }>, 'kind'>): Spec<number> => ({
  kind: 'number',
  ...s,
});
export const choice = <T extends string>(
  s: Omit<Extract<OptionSpec, { kind: 'choice' }>, 'kind' | 'choices' | 'default'> & {
    choices: readonly T[];
    default: T;
  },
): Spec<T> => ({ kind: 'choice', ...s });
export const flag = (s: Omit<Extract<OptionSpec, { kind: 'flag' }>, 'kind'>): Spec<boolean> => ({ kind: 'flag', ...s });
export const text = <T extends string | null = string>(
  s: Omit<Extract<OptionSpec, { kind: 'text' }>, 'kind' | 'nullable'> & { nullable?: boolean },
): Spec<T> => ({ kind: 'text', nullable: false, ...s });
/** A text option taking one or more values (`--models-dir a b`); none given: null. */
export const list = (
  s: Omit<Extract<OptionSpec, { kind: 'text' }>, 'kind' | 'nullable' | 'default'>,
): Spec<string[] | null> => ({ kind: 'text', nullable: true, default: null, ...s, cli: { ...s.cli, variadic: true } });

/**
 * The largest side an exact size may ask for: JPEG's 16-bit limit. Larger sides are refused as values; each
 * image's size is then checked against its format and the output pixel limit (probe.ts planOutput).
 */
export const MAX_OUTPUT_SIDE = FORMAT_MAX_SIDE.jpg;

export type Precision = PrecisionRequest;
export const OVERWRITE_POLICIES = ['skip', 'replace', 'keep'] as const;
export type OverwritePolicy = (typeof OVERWRITE_POLICIES)[number];
/** 2 = double upscale (local engine only). */
export type Passes = 1 | 2;
export type ExecutionProviderSetting = (typeof EXECUTION_PROVIDERS)[number];
export { METADATA_POLICIES, type MetadataPolicy };

/** Model names are checked for shape here; whether an imported one exists is checked where the registry is known. */
function modelProblem(name: string): string | undefined {
  if (name.startsWith('custom:'))
    return /^custom:[A-Za-z0-9][\w.-]{0,99}$/.test(name)
      ? undefined
      : `'${name}' is not a valid custom:<name> model name`;
  const r = resolveModelName(name);
  return r.ok ? undefined : r.message;
}

export const UPSCALE_OPTIONS = {
  model: text<string>({
    default: 'digital-art-4x',
    maxLength: 200,
    valueName: 'name',
    help: 'model: a catalog name, custom:<name> or the bare name of an imported model (see "crisp models list")',
    cli: { flags: '-m, --model', defaultText: 'the best installed photo model', unsetByDefault: true },
    check: modelProblem,
  }),
  scale: int<Scale>({
    min: SCALES[0],
    max: SCALES[SCALES.length - 1]!,
    default: 4,
    help: 'output scale',
    cli: { flags: '-s, --scale' },
  }),
  width: int<number | null>({
    min: 1,
    max: MAX_OUTPUT_SIDE,
    nullable: true,
    default: null,
    unit: 'output pixels',
    help: 'exact output width in pixels, aspect kept (with --height: fit inside the box); replaces --scale',
    cli: { flags: '--width', defaultText: 'from --scale' },
  }),
  height: int<number | null>({
    min: 1,
    max: MAX_OUTPUT_SIDE,
    nullable: true,
    default: null,
    unit: 'output pixels',
    help: 'exact output height in pixels, aspect kept (with --width: fit inside the box); replaces --scale',
    cli: { flags: '--height', defaultText: 'from --scale' },
  }),
  longSide: int<number | null>({
    min: 1,
    max: MAX_OUTPUT_SIDE,
    nullable: true,
    default: null,
    unit: 'output pixels',
    help: 'exact length of the longer side in pixels, aspect kept; replaces --scale',
    cli: { flags: '--long-side', defaultText: 'from --scale' },
  }),
  passes: int<Passes>({
    min: 1,
    max: 2,
    default: 1,
    help: '2 = double upscale, the result goes through the model again (×4 twice is ×16)',
    localOnly: true,
    cli: { flags: '--passes' },
  }),
  format: choice<SaveImageAs>({
    choices: OUTPUT_FORMATS,
    aliases: { jpeg: 'jpg' },
    default: 'png',
    help: 'output format',
    cli: { flags: '-f, --format' },
  }),
  compression: int<number>({
    min: COMPRESSION_MIN,
    max: COMPRESSION_MAX,
    default: 0,
    help: '0 = best quality; jpg/webp quality is 100 − compression, png compresses harder',
    cli: { flags: '-c, --compression' },
  }),
  denoise: num({
    min: 0,
    max: 1,
    step: 0.05,
    default: 1,
    help: `denoise strength for ${DENOISE_MODEL} (1 = the plain model, 0 = strongest); implies --model ${DENOISE_MODEL}`,
    cli: { flags: '--denoise', unsetByDefault: true, defaultText: 'not applied' },
  }),
  face: flag({ default: false, help: 'enhance faces', cli: { flags: '--face' } }),
  preModel: text<string | null>({
    default: null,
    nullable: true,
    maxLength: 200,
    valueName: 'name',
    help: 'a 1× restoration model (de-JPEG, denoise…; catalog name or custom:<name>) run over each image before the upscaler',
    localOnly: true,
    cli: { flags: '--pre-model', defaultText: 'none' },
    check: modelProblem,
  }),
  faceModel: text<string | null>({
    default: null,
    nullable: true,
    maxLength: 200,
    valueName: 'name',
    help: 'with --face: the face model (catalog name or custom:<name>)',
    cli: { flags: '--face-model', defaultText: 'the best installed face model' },
  }),
  faceStrength: num({
    min: 0,
    max: 1,
    step: 0.05,
    default: 1,
    help: 'face enhancement: blend of restored (1) and unrestored (0) faces',
    cli: { flags: '--face-strength' },
  }),
  tileSize: int<number | null>({
    min: 32,
    max: 4096,
    nullable: true,
    default: null,
    unit: 'input pixels',
    help: 'tile size in input pixels',
    localOnly: true,
    cli: { flags: '--tile', defaultText: 'automatic' },
  }),
  threads: int<number | null>({
    min: 1,
    max: 256,
    nullable: true,
    default: null,
    help: 'CPU threads for inference',
    localOnly: true,
    cli: { flags: '--threads', defaultText: 'one per core' },
  }),
  executionProvider: choice<ExecutionProviderSetting>({
    choices: EXECUTION_PROVIDERS,
    default: 'auto',
    help: 'execution provider (falls back to cpu)',
    localOnly: true,
    cli: { flags: '--ep, --execution-provider' },
  }),
  precision: choice<Precision>({
    choices: PRECISIONS,
    default: 'auto',
    help: 'model precision (auto picks int8 on the CPU and fp16 on a GPU, each only where measured close to fp32)',
    localOnly: true,
    cli: { flags: '--precision' },
  }),
  outputFolder: text<string>({
    default: '',
    maxLength: 4096,
    valueName: 'dir',
    help: 'output folder, created if missing',
    cli: { flags: '-o, --out', defaultText: 'beside each input' },
  }),
  template: text<string>({
    default: DEFAULT_TEMPLATE,
    maxLength: 256,
    valueName: 'template',
    help: `output file name: ${TEMPLATE_TOKENS.map((t) => `{${t}}`).join(' ')}`,
    cli: { flags: '-t, --template' },
    check: templateProblem,
  }),
  metadata: choice<MetadataPolicy>({
    choices: METADATA_POLICIES,
    default: 'keep',
    help: "the input's EXIF, ICC, XMP and IPTC: keep (plus a provenance record), keep-no-gps, or strip",
    cli: { flags: '--metadata' },
  }),
  overwrite: choice<OverwritePolicy>({
    choices: OVERWRITE_POLICIES,
    default: 'keep',
    help: 'when the output exists: skip, replace, or keep both (adds -2, -3…)',
    cli: { flags: '--overwrite' },
  }),
} as const satisfies Record<string, Spec<unknown>>;

export type UpscaleOptionKey = keyof typeof UPSCALE_OPTIONS;

/**
 * Settings of this computer (how fast it runs), not of the result: presets leave them out
 * (app/settings/presets.ts); every other option is part of every preset.
 */
export const MACHINE_OPTIONS = [
  'tileSize',
  'threads',
  'executionProvider',
  'precision',
] as const satisfies readonly UpscaleOptionKey[];
export type PresetOptionKey = Exclude<UpscaleOptionKey, (typeof MACHINE_OPTIONS)[number]>;
export const PRESET_OPTION_KEYS = (Object.keys(UPSCALE_OPTIONS) as UpscaleOptionKey[]).filter(
  (k): k is PresetOptionKey => !(MACHINE_OPTIONS as readonly string[]).includes(k),
);
export type ValueOf<S> = S extends { readonly __type?: infer T } ? Exclude<T, undefined> : never;
/** The upscale options as one typed object (part of Settings; what a job runs with). */
export type UpscaleOptions = { -readonly [K in UpscaleOptionKey]: ValueOf<(typeof UPSCALE_OPTIONS)[K]> };

/** In words, what the option accepts (used in errors and --help). */
export function acceptedValues(spec: OptionSpec): string {
  switch (spec.kind) {
    case 'int':
      // A limit bounded only by what a number can hold reads as "a positive integer", not 1 to 9007199254740991.
      if (spec.max >= Number.MAX_SAFE_INTEGER)
        return spec.min === 0
          ? '0 or a positive integer'
          : spec.min === 1
            ? 'a positive integer'
            : `an integer from ${spec.min} up`;
      return `an integer from ${spec.min} to ${spec.max}`;
    case 'number':
      return `a number from ${spec.min} to ${spec.max}`;
    case 'choice':
      return `one of ${spec.choices.join(', ')}`;
    case 'flag':
      return 'true or false';
    case 'text':
      return `a ${spec.valueName}`;
  }
}

const entries = Object.entries(UPSCALE_OPTIONS) as [UpscaleOptionKey, OptionSpec][];

export const UPSCALE_DEFAULTS = Object.fromEntries(entries.map(([k, s]) => [k, s.default])) as UpscaleOptions;

/** What a UI control needs: a slider's min/max/step, a picker's choices, the default and the help text. */
export type OptionControl =
  | { kind: 'range'; min: number; max: number; step: number; nullable: boolean; default: number | null; help: string }
  | { kind: 'choice'; choices: readonly string[]; default: string; help: string }
  | { kind: 'toggle'; default: boolean; help: string }
  | { kind: 'text'; maxLength: number; nullable: boolean; default: string | null; help: string };

export function optionControl(key: UpscaleOptionKey): OptionControl {
  const s: OptionSpec = UPSCALE_OPTIONS[key];
  switch (s.kind) {
    case 'int':
      return { kind: 'range', min: s.min, max: s.max, step: 1, nullable: s.nullable, default: s.default, help: s.help };
    case 'number':
      return { kind: 'range', min: s.min, max: s.max, step: s.step, nullable: false, default: s.default, help: s.help };
    case 'choice':
      return { kind: 'choice', choices: s.choices, default: s.default, help: s.help };
    case 'flag':
      return { kind: 'toggle', default: s.default, help: s.help };
    case 'text':
      return { kind: 'text', maxLength: s.maxLength, nullable: s.nullable, default: s.default, help: s.help };
  }
}
