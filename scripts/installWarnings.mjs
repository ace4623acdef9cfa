#!/usr/bin/env node
/**
 * Checks an `npm install` / `npm ci` log for warnings that come from our own configuration:
 *   - "Unknown project config" — a key in our .npmrc that npm no longer accepts;
 *   - "install-scripts … not yet covered by allowScripts" — a dependency's install script nobody reviewed
 *     (package.json "allowScripts" records the decision);
 *   - "EBADENGINE" while this Node satisfies package.json "engines" — we claim a Node version our
 *     dependencies do not support. Below our stated version the warning is true and expected (CI may test
 *     the engine on an older Node), so it is reported but does not fail.
 * Warnings from the user's own npm config ("Unknown user config") are not ours. Exit 1 when any is ours.
 * Usage: node scripts/installWarnings.mjs npm-install.log
 */
import { readFileSync } from 'node:fs';

const log = readFileSync(process.argv[2] ?? 0, 'utf8');
const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));

/** ">=22.12" against process.version (the only form our engines field uses). */
function satisfies(range, version) {
  const m = /^>=\s*(\d+)(?:\.(\d+))?(?:\.(\d+))?$/.exec(range.trim());
  if (!m) return true;
  const want = [Number(m[1]), Number(m[2] ?? 0), Number(m[3] ?? 0)];
  const have = version.replace(/^v/, '').split('.').map(Number);
  for (let i = 0; i < 3; i++) if (have[i] !== want[i]) return have[i] > want[i];
  return true;
}

const ours = [];
for (const line of log.split('\n')) {
  if (/npm warn Unknown project config/.test(line)) ours.push(line.trim());
  if (/npm warn install-scripts .*not yet covered by allowScripts/.test(line)) ours.push(line.trim());
}
const badEngine = log
  .split('\n')
  .filter((l) => /EBADENGINE\s+package:/.test(l))
  .map((l) => l.replace(/.*package:\s*/, '').replace(/[',]/g, ''));
if (badEngine.length > 0) {
  const claimed = pkg.engines?.node ?? '*';
  if (satisfies(claimed, process.version))
    ours.push(`EBADENGINE on Node ${process.version}, which package.json claims (${claimed}): ${badEngine.join(', ')}`);
  else
    console.error(
      `install warnings: Node ${process.version} is below package.json engines (${claimed}); EBADENGINE from ${badEngine.join(', ')} is expected here.`,
    );
}
if (ours.length > 0) {
  console.error(`install warnings that are ours to fix:\n${ours.map((l) => `  ${l}`).join('\n')}`);
  process.exit(1);
}
console.error('install warnings: none of ours.');
