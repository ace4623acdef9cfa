/**
 * vitest global setup: builds the `crisp` command (out/cli) once per run, so tests that run the real CLI
 * (bin/crisp.js) always exercise the current sources as users get them — compiled, not through tsx.
 */
// @ts-expect-error plain JavaScript build script without type declarations
import { buildCli } from '../../scripts/buildCli.mjs';

export default async function setup(): Promise<void> {
  await (buildCli as (o: { quiet: boolean }) => Promise<void>)({ quiet: true });
}
