/** electron-builder's configuration validates; `npm start` without an Electron binary says so in one line. */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadBundledManifest } from '../../engine/core/models/catalog.js';
import { REPO_ROOT } from '../helpers/paths.js';

const require = createRequire(import.meta.url);

describe('packaging', () => {
  it('electron-builder.yml is a valid configuration with the four targets, extra resources and icons', async () => {
    const { getConfig, validateConfiguration } = require(
      path.join(REPO_ROOT, 'node_modules/app-builder-lib/out/util/config/config.js'),
    ) as {
      getConfig(
        root: string,
        file: string,
        extra: null,
      ): Promise<
        Record<string, unknown> & {
          linux: { target: string[] };
          win: { target: string[] };
          mac: { target: string[] };
          extraResources: { from: string; filter: string[] }[];
        }
      >;
      validateConfiguration(config: unknown, logger: unknown): Promise<void>;
    };
    const { DebugLogger } = require(path.join(REPO_ROOT, 'node_modules/builder-util')) as {
      DebugLogger: new (enabled: boolean) => unknown;
    };
    const config = await getConfig(REPO_ROOT, path.join(REPO_ROOT, 'electron-builder.yml'), null);
    await validateConfiguration(config, new DebugLogger(false));
    expect(config.appId).toBe('app.crisp.upscaler');
    expect(config.productName).toBe('Crisp');
    expect(config.linux.target).toEqual(['AppImage', 'deb']);
    expect(config.win.target).toEqual(['nsis']);
    expect(config.mac.target).toEqual(['dmg']);
    const modelFilter = config.extraResources.find((r) => r.from === 'resources/models')?.filter ?? [];
    expect(modelFilter).toContain('catalog.json');
    // Every bundled weight and its licence text ships (the manifest is the list; minimatch is electron-builder's own).
    const { minimatch } = require('minimatch') as { minimatch: (p: string, pattern: string) => boolean };
    const shipped = (file: string) => modelFilter.some((pattern) => minimatch(file, pattern));
    for (const f of loadBundledManifest(path.join(REPO_ROOT, 'resources/models'))) {
      expect(shipped(f.file), f.file).toBe(true);
      expect(shipped(f.licenceFile), f.licenceFile).toBe(true);
      expect(existsSync(path.join(REPO_ROOT, 'resources/models', f.file)), f.file).toBe(true);
    }
    for (const f of ['bundled.json', 'preview-sample.png']) expect(shipped(f), f).toBe(true);
    expect(existsSync(path.join(REPO_ROOT, 'resources/models/catalog.json'))).toBe(true);
    expect(existsSync(path.join(REPO_ROOT, 'resources/icons/icon.png'))).toBe(true);
  });

  it('npm start without an Electron binary prints one clear line and exits non-zero quickly', async () => {
    const result = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
      const child = spawn(process.execPath, [path.join(REPO_ROOT, 'scripts/start.js')], {
        cwd: REPO_ROOT,
        // A dist folder that cannot exist: the binary is "missing" even where one was downloaded.
        env: { ...process.env, ELECTRON_OVERRIDE_DIST_PATH: path.join(REPO_ROOT, '.no-electron-here') },
      });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (d: Buffer) => (stdout += d));
      child.stderr.on('data', (d: Buffer) => (stderr += d));
      child.on('close', (code) => resolve({ code, stdout, stderr }));
    });
    expect(result.code).not.toBe(0);
    const lines = result.stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^crisp: the Electron binary is not available.*npm run ui/);
    expect(result.stdout).toBe('');
  });
});
