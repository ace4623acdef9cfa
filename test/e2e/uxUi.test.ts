/**
 * Issue 18 in real Chromium through `crisp ui` (real app layer, real engine, the fastest model, small
 * images): a keyboard-only flow (add, pick, start, cancel one, finish, compare, download) whose download
 * is compared byte for byte with the file on disk; "Download all" as a zip; axe-core with no violations
 * in every state; no horizontal overflow from 360 px to 4K; and the README's screenshots at 390, 1024
 * and 1920 px in light and dark, written to docs/screenshots/.
 */
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { unzipEntries } from '../helpers/unzip.js';
import { REPO_ROOT } from '../helpers/paths.js';
import { createTestGate, inputPoint } from '../helpers/testGate.js';
import { axeViolations } from './axe.js';
import { launchChromium } from './browser.js';
import { chooseFiles, FAST_MODEL, LR, openUi, startUiUnderTest, type UiUnderTest } from './uiHarness.js';

const DOCS_SCREENSHOTS = path.join(REPO_ROOT, 'docs', 'screenshots');

let browser: Browser;
let ui: UiUnderTest;

beforeAll(async () => {
  ui = await startUiUnderTest({ model: FAST_MODEL, scale: 2, format: 'png' });
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
  await ui?.cleanup();
});

const states: Record<string, string[]> = {};
async function audit(page: Page, state: string): Promise<void> {
  states[state] = await axeViolations(page);
}

/** Elements wider than the viewport or sticking out of it (what a person would see cut off). */
async function overflow(page: Page): Promise<string[]> {
  return page.evaluate(`(() => {
    const width = document.documentElement.clientWidth;
    const out = [];
    if (document.documentElement.scrollWidth > width) out.push('page scrolls sideways: ' + document.documentElement.scrollWidth + ' > ' + width);
    for (const el of document.querySelectorAll('body *')) {
      const r = el.getBoundingClientRect();
      if (r.width === 0 || r.height === 0 || el.closest('.visually-hidden')) continue;
      if (r.right > width + 0.5 || r.left < -0.5) out.push(el.tagName.toLowerCase() + '.' + el.className + ' [' + Math.round(r.left) + ', ' + Math.round(r.right) + ']');
    }
    return out.slice(0, 10);
  })()`) as Promise<string[]>;
}

/** Tab (never the mouse) until the focused control has this accessible name. */
async function tabTo(page: Page, name: string | RegExp, max = 80): Promise<void> {
  for (let i = 0; i < max; i++) {
    await page.keyboard.press('Tab');
    const focused = (await page.evaluate(`(() => {
      const el = document.activeElement;
      if (!el) return '';
      const labelled = el.getAttribute('aria-label') ?? (el.labels && el.labels[0] ? el.labels[0].textContent : '') ?? '';
      return (labelled || el.textContent || '').trim();
    })()`)) as string;
    if (typeof name === 'string' ? focused === name : name.test(focused)) return;
  }
  throw new Error(`Tab never reached ${String(name)}`);
}

async function shoot(page: Page, name: string): Promise<void> {
  // The keyboard flow scrolled the panes to the focused control; a screenshot shows each from its top.
  await page.evaluate(`document.querySelectorAll('.content, .panel').forEach((e) => { e.scrollTop = 0; })`);
  for (const theme of ['light', 'dark'] as const) {
    await page.evaluate(`document.documentElement.dataset.theme = ${JSON.stringify(theme)}`);
    await page.screenshot({ path: path.join(DOCS_SCREENSHOTS, `${name}-${theme}.png`) });
  }
}

describe('crisp ui, the app a designer keeps open all day', () => {
  it('keyboard only: add, pick, start, cancel one, finish, compare, download (bytes equal the file on disk); axe in every state; no overflow', async () => {
    const { page, problems } = await openUi(browser, ui.ui.server.url);
    const bar = page.getByTestId('batch-status');
    await page.getByText('Upscale in three steps').waitFor();
    await audit(page, 'empty');
    await page.setViewportSize({ width: 1024, height: 768 });
    await shoot(page, 'empty-1024');

    // Add: Ctrl+O opens the file chooser (the OS dialog is the only part outside the page).
    await chooseFiles(
      page,
      () => page.keyboard.press('Control+O'),
      ['bird', 'head', 'butterfly'].map((n) => path.join(LR, `${n}_LRBI_x4.png`)),
    );
    await bar.getByText('Ready: 3 waiting', { exact: true }).waitFor();
    await audit(page, 'queued');

    // Pick: the scale, by keyboard on the select (×2 → ×3 → ×2).
    await tabTo(page, 'Scale');
    await page.keyboard.press('ArrowDown');
    await expect.poll(async () => (await ui.ui.service.getSettings()).scale).toBe(3);
    await page.keyboard.press('ArrowUp');
    await expect.poll(async () => (await ui.ui.service.getSettings()).scale).toBe(2);

    // Start, then cancel the last image while it waits (the first is held by the test gate in the engine
    // process meanwhile, so the last one is surely still waiting, whatever the machine's speed).
    const gate = await createTestGate({ inProcess: true });
    const first = inputPoint('bird_LRBI_x4.png');
    try {
      await gate.hold(first);
      await page.keyboard.press('Control+Enter');
      await gate.reached(first);
      await bar.getByText(/^Upscaling: /).waitFor();
      await audit(page, 'running');
      await tabTo(page, 'Cancel butterfly_LRBI_x4.png');
      await page.keyboard.press('Enter');
      await expect
        .poll(
          async () => (await ui.ui.service.getQueue()).items.find((i) => i.inputName.startsWith('butterfly'))?.status,
        )
        .toBe('cancelled');
    } finally {
      await gate.release(first);
      await gate.close();
    }
    await bar.getByText('2 done · 1 stopped', { exact: true }).waitFor({ timeout: 90_000 });
    await page.getByRole('button', { name: 'Resume (1)' }).waitFor();
    await audit(page, 'done');
    for (const width of [1024, 1920, 390]) {
      await page.setViewportSize({ width, height: { 390: 844, 1024: 768, 1920: 1080 }[width] ?? 900 });
      await shoot(page, `done-${width}`);
    }
    await page.setViewportSize({ width: 1280, height: 860 });

    // Compare, then Download from the comparison: the bytes are the file on disk.
    await page.keyboard.press('Escape');
    await tabTo(page, 'Compare bird_LRBI_x4.png');
    await page.keyboard.press('Enter');
    const dialog = page.getByRole('dialog', { name: 'Compare bird_LRBI_x4.png' });
    await dialog.getByRole('img', { name: /^After/ }).waitFor();
    await audit(page, 'compare');
    await page.setViewportSize({ width: 1024, height: 768 });
    await shoot(page, 'compare-1024');
    await page.setViewportSize({ width: 1280, height: 860 });
    const download = page.waitForEvent('download');
    await tabTo(page, 'Download bird_LRBI_x4.png', 20);
    await page.keyboard.press('Enter');
    const got = await download;
    const bird = (await ui.ui.service.getQueue()).items.find((i) => i.inputName === 'bird_LRBI_x4.png')!;
    expect(got.suggestedFilename()).toBe(path.basename(bird.outputPath!));
    expect((await readFile((await got.path())!)).equals(await readFile(bird.outputPath!))).toBe(true);
    await page.keyboard.press('Escape');
    await expect.poll(() => page.getByRole('dialog').count()).toBe(0);

    // Download all: a zip with both results, byte for byte.
    const zipDownload = page.waitForEvent('download');
    await tabTo(page, 'Download all (2)');
    await page.keyboard.press('Enter');
    const zip = await zipDownload;
    expect(zip.suggestedFilename()).toBe('crisp-results.zip');
    const entries = await unzipEntries(await readFile((await zip.path())!));
    const done = (await ui.ui.service.getQueue()).items.filter((i) => i.status === 'done');
    expect(Object.keys(entries).sort()).toEqual(done.map((i) => path.basename(i.outputPath!)).sort());
    for (const i of done)
      expect(entries[path.basename(i.outputPath!)]!.equals(await readFile(i.outputPath!))).toBe(true);

    // Error: a broken file is refused at once, with its own line.
    const broken = path.join(ui.dataDir, 'broken.png');
    await writeFile(broken, Buffer.concat([Buffer.from([137, 80, 78, 71, 13, 10, 26, 10]), Buffer.alloc(500, 7)]));
    await page.getByLabel('Add images').setInputFiles([broken]);
    await page.getByRole('alert').filter({ hasText: 'broken.png is damaged' }).waitFor();
    await audit(page, 'error');

    // Settings: a real model preview made through the bridge, and the engine settings opened.
    // Made on the person's own latest image (the broken one above could not be read, so the one before it),
    // at least 256 px wide on screen.
    await page.getByRole('button', { name: 'Preview Digital Art' }).click();
    const preview = page.getByRole('img', { name: 'The centre of your image, upscaled by Digital Art' });
    await preview.waitFor({ timeout: 60_000 });
    await expect.poll(async () => (await preview.boundingBox())?.width ?? 0).toBeGreaterThanOrEqual(256);
    expect(await preview.evaluate((img) => (img as unknown as { naturalWidth: number }).naturalWidth)).toBe(256);
    await page.getByText('Engine settings').click();
    await audit(page, 'settings');

    // Cloud with nothing configured: the connect card, no error.
    await page.getByRole('radio', { name: 'Cloud' }).check();
    await page.getByRole('region', { name: 'Connect to an upscaling service' }).waitFor();
    await audit(page, 'cloud card');
    await page.setViewportSize({ width: 1024, height: 768 });
    await shoot(page, 'cloud-card-1024');
    await page.getByRole('radio', { name: 'Local' }).check();
    await page.getByRole('region', { name: 'Connect to an upscaling service' }).waitFor({ state: 'detached' });

    // Narrow and wide: nothing sticks out, from 360 px to 4K.
    const cutOff: Record<number, string[]> = {};
    for (const width of [360, 390, 720, 1024, 1920, 3840]) {
      await page.setViewportSize({ width, height: 900 });
      cutOff[width] = await overflow(page);
    }
    expect(cutOff).toEqual({ 360: [], 390: [], 720: [], 1024: [], 1920: [], 3840: [] });
    await page.setViewportSize({ width: 390, height: 844 });
    await audit(page, 'narrow');

    expect(states).toEqual({
      empty: [],
      queued: [],
      running: [],
      done: [],
      compare: [],
      error: [],
      settings: [],
      'cloud card': [],
      narrow: [],
    });
    expect(problems).toEqual([]);
  });
});
