/**
 * Reads the flags commander collected for a table of declared options (processOptions.ts: `crisp serve`,
 * `crisp worker`, `crisp ui`) back into typed values: each checked against its declaration, a missing one
 * taken from its environment variable, else its default. Loaded by the commands' actions only (it needs zod).
 */
import { parseSpecText } from '../settings/optionSchemas.js';
import { acceptedValues, type OptionSpec, type ValueOf } from '../settings/upscaleOptions.js';
import { usageError } from './cliError.js';
import { attributeOf, flagOf } from './optionFlags.js';

/** The typed values of a table of options. */
export type OptionValues<T extends Record<string, OptionSpec>> = { -readonly [K in keyof T]: ValueOf<T[K]> };

/**
 * One value given as text, checked; a bad one is a usage error naming where it came from (`--port`,
 * `$CRISP_DB_URL`) and what the option accepts, or the option's own check's sentence.
 */
export function checkedValue(spec: OptionSpec, source: string, given: string | boolean): unknown {
  const r = parseSpecText(spec, given);
  if (r.ok) return r.value;
  throw usageError(
    r.fromCheck ? `${source}: ${r.problem}` : `${source} must be ${acceptedValues(spec)}, not '${String(given)}'`,
  );
}

/** Every option of `table`: the flag given, else its environment variable (when set and not empty), else its default. */
export function readOptionFlags<T extends Record<string, OptionSpec>>(
  raw: Record<string, unknown>,
  table: T,
  env: NodeJS.ProcessEnv = process.env,
): OptionValues<T> {
  const out: Record<string, unknown> = {};
  for (const [key, spec] of Object.entries(table)) {
    const given = raw[attributeOf(spec)] as string | boolean | string[] | undefined;
    const fromEnv = spec.cli.env ? env[spec.cli.env] : undefined;
    if (given === undefined && fromEnv) {
      const value = checkedValue(spec, `$${spec.cli.env!}`, fromEnv);
      out[key] = spec.cli.variadic ? [value] : value;
    } else if (given === undefined) {
      out[key] = spec.cli.unsetByDefault ? undefined : spec.default;
    } else if (Array.isArray(given)) {
      out[key] = given.map((g) => checkedValue(spec, flagOf(spec), g));
    } else {
      out[key] = checkedValue(spec, flagOf(spec), given);
    }
  }
  return out as OptionValues<T>;
}
