/**
 * The layer rule (renderer → electron → app → engine) is enforced by `npm run lint` (eslint.config.js)
 * (part of `npm test`) and, for engine/, by `npm run typecheck` too (rootDir: a file outside engine/ is
 * TS6059). Each case lints source text as if it were a file at that path, as `npm run lint` sees it.
 */
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { ESLint } from 'eslint';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../helpers/paths.js';

const eslint = new ESLint({ cwd: REPO_ROOT });

async function problems(file: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath: path.join(REPO_ROOT, file) });
  return (result?.messages ?? []).map((m) => m.message);
}

describe('layer rule', () => {
  it('refuses engine → app, electron, renderer and UI packages', async () => {
    expect(await problems('engine/server/probe.ts', "import '../../app/cli/table.js';\n")).toEqual([
      expect.stringContaining('engine/ is pure Node and imports no other layer'),
    ]);
    expect(
      await problems('engine/core/pipeline/probe.ts', "import type { X } from '../../../renderer/src/format.js';\n"),
    ).toHaveLength(1);
    expect(await problems('engine/service/probe.ts', "import { app } from 'electron';\n")).toEqual([
      expect.stringContaining('Electron is only for electron/'),
    ]);
    expect(
      await problems(
        'engine/server/probe.ts',
        "import { buildApp } from './app.js';\nimport '../contract/index.js';\n",
      ),
    ).toEqual([]);
  });

  it('refuses app → electron or renderer, allows app → engine', async () => {
    expect(await problems('app/service/probe.ts', "import '../../electron/main/appPaths.js';\n")).toEqual([
      expect.stringContaining('app/ is pure Node'),
    ]);
    expect(await problems('app/cli/probe.ts', "import '../../renderer/src/App.js';\n")).toHaveLength(1);
    expect(await problems('app/cli/probe.ts', "import '../../engine/contract/index.js';\n")).toEqual([]);
  });

  it('lets app/ and electron/ use the engine only through its parts’ entries, engine/<part>/index.js', async () => {
    const deep = expect.stringContaining("Import the engine part's public entry, engine/<part>/index.js");
    expect(
      await problems('app/cli/probe.ts', "import { resolveModel } from '../../engine/core/models/catalog.js';\n"),
    ).toEqual([deep]);
    expect(
      await problems('app/service/probe.ts', "import type { X } from '../../engine/service/limits.js';\n"),
    ).toEqual([deep]);
    expect(
      await problems('app/jobs/probe.ts', "export { CrispError } from '../../engine/contract/errorCatalog.js';\n"),
    ).toEqual([deep]);
    expect(await problems('electron/main/probe.ts', "import '../../engine/server/options.js';\n")).toEqual([deep]);
    // A dynamic import() too: heavy modules load through the entry's loaders.
    expect(
      await problems(
        'app/cli/commands/probe.ts',
        "const { startServer } = await import('../../../engine/server/start.js');\n",
      ),
    ).toEqual([expect.stringContaining('Load a heavy engine module through its part')]);
    // The option table is shared with the renderer: it names its plain-data modules, and only those.
    expect(
      await problems('app/settings/upscaleOptions.ts', "import '../../engine/core/models/modelNames.js';\n"),
    ).toEqual([]);
    expect(await problems('app/settings/upscaleOptions.ts', "import '../../engine/core/models/catalog.js';\n")).toEqual(
      [deep],
    );
    const entries = [
      "import { CrispError } from '../../engine/contract/index.js';",
      "import { loadModelCatalog, type CatalogEntry } from '../../engine/core/index.js';",
      "import type { EngineLimits } from '../../engine/service/index.js';",
      "export { DEFAULT_SERVER_LIMITS } from '../../engine/server/index.js';",
      "const core = await import('../../engine/core/index.js');",
    ].join('\n');
    expect(await problems('app/cli/probe.ts', `${entries}\n`)).toEqual([]);
    expect(await problems('electron/main/probe.ts', `${entries}\n`)).toEqual([]);
  });

  it('lets the renderer see only the service interface, the preload API types and contract enums', async () => {
    expect(await problems('renderer/src/probe.ts', "import '../../engine/core/pipeline/index.js';\n")).toEqual([
      expect.stringContaining('renderer/ reaches the main process only through the typed preload API'),
    ]);
    expect(await problems('renderer/src/probe.ts', "import '../../app/jobs/jobQueue.js';\n")).toHaveLength(1);
    expect(await problems('renderer/src/probe.ts', "import '../../app/settings/settingsStore.js';\n")).toHaveLength(1);
    expect(await problems('renderer/src/probe.ts', "import '../../electron/main/main.js';\n")).toHaveLength(1);
    expect(await problems('renderer/src/probe.ts', "import { ipcRenderer } from 'electron';\n")).toHaveLength(1);
    const allowed = [
      "import type { CrispService } from '../../app/service/crispService.js';",
      "import type { DesktopApi } from '../../electron/preload/desktopApi.js';",
      "import { MODEL_NAMES } from '../../engine/contract/enums.js';",
      "import { optionControl } from '../../app/settings/upscaleOptions.js';",
    ].join('\n');
    expect(await problems('renderer/src/probe.ts', `${allowed}\n`)).toEqual([]);
  });

  it('inside engine/: contract ← core ← service ← server, never the wrong way', async () => {
    const wrongWay = expect.stringContaining('imports only the layers below it');
    // core, at any depth, never reaches the service or the server.
    expect(await problems('engine/core/probe.ts', "import '../service/tasks/taskStore.js';\n")).toEqual([wrongWay]);
    expect(
      await problems('engine/core/pipeline/probe.ts', "import { assembleEngine } from '../../service/engine.js';\n"),
    ).toEqual([wrongWay]);
    expect(await problems('engine/core/faces/probe.ts', "import '../../service/storage/mutex.js';\n")).toEqual([
      wrongWay,
    ]);
    expect(await problems('engine/core/models/probe.ts', "import '../../server/app.js';\n")).toEqual([wrongWay]);
    // contract is the floor: it imports none of the others.
    expect(await problems('engine/contract/probe.ts', "import '../core/pipeline/index.js';\n")).toEqual([wrongWay]);
    expect(await problems('engine/contract/probe.ts', "import type { Core } from '../core/index.js';\n")).toEqual([
      wrongWay,
    ]);
    expect(await problems('engine/contract/probe.ts', "import '../service/limits.js';\n")).toEqual([wrongWay]);
    // service never reaches the server.
    expect(await problems('engine/service/tasks/probe.ts', "import '../../server/app.js';\n")).toEqual([wrongWay]);
    expect(await problems('engine/service/engine.ts', "import '../server/app.js';\n")).toEqual([wrongWay]);
    // The right way is allowed, and the engine-wide rule still holds inside a layer.
    const down = [
      "import '../../contract/index.js';",
      "import '../../core/index.js';",
      "import '../../core/pipeline/index.js';",
      "import '../storage/mutex.js';",
      "import '../engine.js';",
    ].join('\n');
    expect(await problems('engine/service/tasks/probe.ts', `${down}\n`)).toEqual([]);
    expect(
      await problems(
        'engine/server/probe.ts',
        "import '../service/tasks/taskStore.js';\nimport '../service/engine.js';\nimport '../core/index.js';\n",
      ),
    ).toEqual([]);
    expect(
      await problems('engine/core/probe.ts', "import '../contract/index.js';\nimport './inference/index.js';\n"),
    ).toEqual([]);
    expect(await problems('engine/core/pipeline/probe.ts', "import '../../../app/cli/table.js';\n")).toEqual([
      expect.stringContaining('engine/ is pure Node'),
    ]);
  });

  it('has every file of engine/ in one of its five part folders', () => {
    const outside = readdirSync(path.join(REPO_ROOT, 'engine')).filter(
      (name) => !['contract', 'core', 'convert', 'service', 'server', 'tsconfig.json'].includes(name),
    );
    // A new folder belongs inside one of the five parts (docs/architecture.md says which knows what).
    expect(outside, 'engine/ entries outside contract, core, convert, service and server').toEqual([]);
  });

  it('keeps engine/convert (getting models in) over core, and out of core, the service and the server', async () => {
    const wrongWay = expect.stringContaining('imports only the layers below it');
    // An upscale never loads the tool chain: core reaches none of it, at any depth, nor does the service.
    expect(await problems('engine/core/models/probe.ts', "import '../../convert/convert.js';\n")).toEqual([wrongWay]);
    expect(await problems('engine/core/probe.ts', "import type { ArchSpec } from '../convert/index.js';\n")).toEqual([
      wrongWay,
    ]);
    expect(await problems('engine/service/probe.ts', "import '../convert/install/fetch.js';\n")).toEqual([wrongWay]);
    expect(await problems('engine/server/probe.ts', "import '../convert/index.js';\n")).toEqual([wrongWay]);
    // convert reads core and the contract, never the service or the server.
    expect(
      await problems(
        'engine/convert/install/probe.ts',
        "import '../../core/onnx/onnxReader.js';\nimport '../../contract/errorCatalog.js';\nimport '../convert.js';\n",
      ),
    ).toEqual([]);
    expect(await problems('engine/convert/probe.ts', "import '../service/limits.js';\n")).toEqual([wrongWay]);
    expect(await problems('engine/convert/int8/probe.ts', "import '../../server/app.js';\n")).toEqual([wrongWay]);
    // app/ uses it through its entry, like every part.
    expect(await problems('app/cli/probe.ts', "import '../../engine/convert/index.js';\n")).toEqual([]);
    expect(await problems('app/cli/probe.ts', "import '../../engine/convert/convert.js';\n")).toEqual([
      expect.stringContaining("Import the engine part's public entry"),
    ]);
  });
});
