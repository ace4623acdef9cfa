/**
 * The CLI flags of `crisp upscale` and `crisp batch`, generated from the one option declaration
 * (app/settings/upscaleOptions.ts): both commands get the same flags, help text, defaults and checks,
 * and a new option appears in both by being declared once. Plus the few flags that are about the run,
 * not the image (--remote, --api-key-file, --json, --data).
 */
import { Option, type Command } from 'commander';
import { UPSCALE_OPTIONS, type OptionSpec, type UpscaleOptionKey } from '../settings/upscaleOptions.js';

/** How a value is shown after a flag: `--scale <1-8>`, `--format <jpg|png|webp>`, `--out <dir>`. */
function valuePlaceholder(spec: OptionSpec): string | undefined {
  switch (spec.kind) {
    case 'int':
    case 'number':
      return `<${spec.min}-${spec.max}>`;
    case 'choice':
      return `<${spec.choices.join('|')}>`;
    case 'flag':
      return undefined;
    case 'text':
      return `<${spec.valueName}>`;
  }
}

const entries = Object.entries(UPSCALE_OPTIONS) as [UpscaleOptionKey, OptionSpec][];

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
  for (const [, spec] of entries) {
    const placeholder = valuePlaceholder(spec);
    const shown =
      spec.cli.defaultText ??
      (spec.kind === 'flag' || spec.default === null || spec.default === '' ? undefined : String(spec.default));
    const option = new Option(
      placeholder ? `${spec.cli.flags} ${placeholder}` : spec.cli.flags,
      `${spec.help}${shown ? ` (default: ${shown})` : ''}`,
    );
    command.addOption(option);
  }
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
