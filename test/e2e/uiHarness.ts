/**
 * Shared setup of the browser e2e tests: a fresh renderer build, `crisp ui` (real app layer, real
 * engine worker, real models) on temporary folders, and headless Chromium pointed at its URL.
 */
import { mkdir, mkdtemp, readdir, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { build } from 'vite';
import type { Settings } from '../../app/service/crispService.js';
import { startUi, type RunningUi } from '../../app/ui/startUi.js';
import { IMAGES_DIR, MODELS_DIR, REPO_ROOT } from '../helpers/paths.js';

export const LR = path.join(IMAGES_DIR, 'set5-x4', 'lr');
export const SET14 = path.join(IMAGES_DIR, 'set14');
export const FAST_MODEL = 'digital-art-4x';
export const SCREENSHOT_DIR = path.join(REPO_ROOT, 'test-results', 'e2e');

let built: Promise<string> | undefined;

/** One renderer build per test process, into a temporary folder (never over someone's out/). */
export function buildRendererOnce(): Promise<string> {
  built ??= (async () => {
    const outDir = await mkdtemp(path.join(os.tmpdir(), 'crisp-renderer-'));
    await build({
      configFile: path.join(REPO_ROOT, 'vite.config.ts'),
      logLevel: 'warn',
      build: { outDir, emptyOutDir: true },
    });
    return outDir;
  })();
  return built;
}

export interface UiUnderTest {
  ui: RunningUi;
  dataDir: string;
  outDir: string;
  cleanup(): Promise<void>;
}

export interface UiStartOptions {
  /**
   * 'shared' (default): the real weights of ../shared/models. 'bundled-only': a first start on a machine
   * with no models folder at all — no CRISP_MODELS_DIR, a user models folder that does not exist — so only
   * what ships in resources/models can run. No settings are given then: everything is a first start's default.
   */
  models?: 'shared' | 'bundled-only';
}

const ENV_KEYS = ['CRISP_MODELS_DIR', 'XDG_DATA_HOME'] as const;

export async function startUiUnderTest(
  settings: Partial<Settings> = {},
  options: UiStartOptions = {},
): Promise<UiUnderTest> {
  const savedEnv = Object.fromEntries(ENV_KEYS.map((k) => [k, process.env[k]]));
  const rendererDir = await buildRendererOnce();
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'crisp-ui-data-'));
  const outDir = await mkdtemp(path.join(os.tmpdir(), 'crisp-ui-out-'));
  const bundledOnly = options.models === 'bundled-only';
  // The engine worker inherits the environment: point it at the real weights, or at nothing but the bundled ones.
  if (bundledOnly) {
    delete process.env.CRISP_MODELS_DIR;
    process.env.XDG_DATA_HOME = path.join(dataDir, 'no-such-data-home');
  } else {
    process.env.CRISP_MODELS_DIR = MODELS_DIR;
  }
  const ui = await startUi({
    dataDir,
    rendererDir,
    settingsDefaults: bundledOnly ? settings : { outputFolder: outDir, executionProvider: 'cpu', ...settings },
  });
  return {
    ui,
    dataDir,
    outDir,
    async cleanup() {
      await ui.close();
      for (const k of ENV_KEYS) {
        if (k === 'CRISP_MODELS_DIR' && !bundledOnly) continue;
        if (savedEnv[k] === undefined) delete process.env[k];
        else process.env[k] = savedEnv[k];
      }
      await rm(dataDir, { recursive: true, force: true });
      await rm(outDir, { recursive: true, force: true });
    },
  };
}

/** A page on the UI that fails the test on any script error or CSP violation. */
export async function openUi(browser: Browser, url: string): Promise<{ page: Page; problems: string[] }> {
  const page = await browser.newPage({ viewport: { width: 1280, height: 860 } });
  const problems: string[] = [];
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('console', (m) => {
    if (m.type() === 'error') problems.push(`console: ${m.text()}`);
  });
  await page.goto(url);
  await page.getByRole('combobox', { name: 'Model' }).waitFor();
  return { page, problems };
}

export async function screenshot(page: Page, name: string): Promise<void> {
  await mkdir(SCREENSHOT_DIR, { recursive: true });
  await page.screenshot({ path: path.join(SCREENSHOT_DIR, `${name}.png`) });
}

export async function listDir(dir: string): Promise<string[]> {
  return (await readdir(dir)).sort();
}

/**
 * Opens the page's file chooser with `open` and hands it `files`. Playwright turns on file-chooser
 * interception without waiting for the browser to confirm it; once in a full-suite run on this 2-core machine
 * a Ctrl+O opened no chooser Playwright saw (30 s, never alone in many runs). So the action is repeated, a
 * bounded number of times, until a chooser is seen; a UI whose action opens none still fails here.
 */
export async function chooseFiles(page: Page, open: () => Promise<void>, files: string[]): Promise<void> {
  for (let attempt = 0; attempt < 3; attempt++) {
    const chooser = page.waitForEvent('filechooser', { timeout: 10_000 }).catch(() => undefined);
    await open();
    const c = await chooser;
    if (c) return c.setFiles(files);
  }
  throw new Error('the file chooser never opened');
}
