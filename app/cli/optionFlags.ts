/**
 * CLI flags generated from option declarations. `crisp upscale` and `crisp batch` take the upscale options
 * (app/settings/upscaleOptions.ts): both commands get the same flags, help text, defaults and checks, and a
 * new option appears in both by being declared once; plus the few flags that are about the run, not the image
 * (--remote, --api-key-file, --json, --data). `crisp serve`, `crisp worker` and `crisp ui` take theirs from
 * app/cli/processOptions.ts, through the same addOptionFlags. The values are read by readOptionFlags.ts.
 */
import { Option, type Command } from 'commander';
import { UPSCALE_OPTIONS, type OptionSpec } from '../settings/upscaleOptions.js';

/** How a value is shown after a flag: `--scale <1-8>`, `--format <jpg|png|webp>`, `--out <dir>`, `--models-dir <dir...>`. */
function valuePlaceholder(spec: OptionSpec): string | undefined {
  const many = spec.cli.variadic ? '...' : '';
  switch (spec.kind) {
    case 'int':
      return spec.valueName ? `<${spec.valueName}${many}>` : `<${spec.min}-${spec.max}>`;
    case 'number':
      return `<${spec.min}-${spec.max}>`;
    case 'choice':
      return `<${spec.choices.join('|')}>`;
    case 'flag':
      return undefined;
    case 'text':
      return `<${spec.valueName}${many}>`;
  }
}

/** The long flag named in messages: `--ep` of `--ep, --execution-provider`, `--scale` of `-s, --scale`. */
export function flagOf(spec: OptionSpec): string {
  return spec.cli.flags.split(/[ ,]+/).find((f) => f.startsWith('--')) ?? spec.cli.flags;
}

/** Where commander keeps the value: its last long flag in camel case (`--execution-provider` → executionProvider). */
export function attributeOf(spec: OptionSpec): string {
  const long = spec.cli.flags.split(/[ ,]+/).filter((f) => f.startsWith('--'));
  return (long[long.length - 1] ?? '').slice(2).replace(/-([a-z])/g, (_m, c: string) => c.toUpperCase());
}

/**
 * Adds a flag for each option, its help from the declaration: with `marksLocal` (upscale, batch: they may run
 * remotely) "local:" before options only the local engine uses; the default (or where it comes from) after. Defaults are applied when the flags are read, not by
 * commander, so a flag given can be told from a default and the environment variable can come between.
 */
export function addOptionFlags(command: Command, specs: Iterable<OptionSpec>, marksLocal = false): Command {
  for (const spec of specs) {
    const placeholder = valuePlaceholder(spec);
    const fallback =
      spec.cli.defaultText ??
      (spec.kind === 'flag' || spec.default === null || spec.default === '' ? undefined : String(spec.default));
    const shown = spec.cli.env ? `$${spec.cli.env}${fallback ? `, else ${fallback}` : ''}` : fallback;
    const option = new Option(
      placeholder ? `${spec.cli.flags} ${placeholder}` : spec.cli.flags,
      `${marksLocal && spec.localOnly ? 'local: ' : ''}${spec.help}${shown ? ` (default: ${shown})` : ''}`,
    );
    command.addOption(option);
  }
  return command;
}

export interface RunFlags {
  /** A preset's options, under the flags given (a flag given wins over the preset). */
  preset?: string;
  /** Set by `crisp FILE…` (no sub-command): the default preset applies. */
  defaultPreset?: boolean;
  remote?: string;
  apiKeyFile?: string;
  json?: boolean;
  data?: string;
}

/** Adds every upscale option, then the run flags, to `command` (used by both upscale and batch). */
export function addUpscaleFlags(command: Command): Command {
  addOptionFlags(command, Object.values(UPSCALE_OPTIONS), true);
  command.option(
    '--preset <name>',
    'start from this preset\'s options; flags given override them ("crisp presets list")',
  );
  // Set by `crisp FILE…` (app/cli/main.ts), not typed by anyone.
  command.addOption(new Option('--default-preset').hideHelp());
  return command
    .option('--remote <url>', 'upscale through the service at this base URL instead of on this computer')
    .option('--api-key-file <file>', 'with --remote: file holding the API key (default: $CRISP_API_KEY)')
    .option('--json', 'print the results as JSON on stdout (see "crisp help upscale")')
    .option('--data <dir>', "local: keep the engine's task records in this folder (default: a temporary folder)");
}
