#!/usr/bin/env node
// The `crisp` command: runs the compiled CLI (out/cli, built by `npm run build:cli`, which `npm install`
// runs as `prepare`). CRISP_DEV=1 runs the TypeScript sources through tsx instead (development only).
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const built = fileURLToPath(new URL('../out/cli/main.js', import.meta.url));
if (process.env.CRISP_DEV === '1') {
  const { register } = await import('tsx/esm/api');
  register();
  await import('../app/cli/main.ts');
} else if (existsSync(built)) {
  await import(built);
} else {
  process.stderr.write(
    'crisp: error: the command line is not built yet. Run "npm run build:cli" (npm install does it too), or set CRISP_DEV=1 to run the sources.\n',
  );
  process.exitCode = 1;
}
