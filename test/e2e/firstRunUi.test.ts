/**
 * First launch → finished picture, offline (issue 26): a fresh data folder and no models folder at all — only
 * the weights that ship in resources/models — then one click on "Try a sample image" upscales the sample with a
 * bundled model and the result appears, with no other click and no request leaving 127.0.0.1. That result was
 * never downloaded, so Clear finished asks before deleting it.
 */
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { Browser } from 'playwright-core';
import sharp from 'sharp';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { axeViolations } from './axe.js';
import { launchChromium } from './browser.js';
import { openUi, screenshot, startUiUnderTest, type UiUnderTest } from './uiHarness.js';

let browser: Browser;
let current: UiUnderTest | undefined;

beforeAll(async () => {
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
});
afterEach(async () => {
  await current?.cleanup();
  current = undefined;
});

describe('first run, offline, no models folder', () => {
  it('Try a sample upscales the sample with a bundled model and shows the result without another click', async () => {
    current = await startUiUnderTest({}, { models: 'bundled-only' });
    const ui = current;
    expect(process.env.CRISP_MODELS_DIR).toBeUndefined();
    expect(existsSync(process.env.XDG_DATA_HOME!)).toBe(false);

    const { page, problems } = await openUi(browser, ui.ui.server.url);
    // Offline: anything not addressed to the local server is refused and recorded.
    const outside: string[] = [];
    await page.route('**/*', (route) => {
      const url = new URL(route.request().url());
      if (url.hostname === '127.0.0.1' || url.protocol === 'data:' || url.protocol === 'blob:') return route.continue();
      outside.push(url.href);
      return route.abort();
    });

    // The default model is an installed (bundled) one, and the guide says the app works offline.
    const model = page.getByRole('combobox', { name: 'Model' });
    expect(await model.inputValue()).toBe('service-lite-4x');
    expect(await model.locator('option:checked').textContent()).not.toMatch(/not installed/i);
    await page
      .getByTestId('empty-offline')
      .getByText(/^Works offline: .*Service Lite.*Digital Art/)
      .waitFor();
    // Downloads are an extra, each with its size.
    expect(await page.getByTestId('empty-downloads').textContent()).toMatch(/Natural Max \(about \d+\.\d MB\)/);
    expect(await axeViolations(page)).toEqual([]);
    await screenshot(page, 'first-run-offline');

    await page.getByRole('button', { name: 'Try a sample image' }).click();
    // No further click: the run starts and finishes on its own.
    const bar = page.getByTestId('batch-status');
    await bar.getByText('1 done', { exact: true }).waitFor({ timeout: 120_000 });
    const row = page.getByRole('listitem', { name: 'crisp-sample.png' });
    await row.getByText(/^Done in /).waitFor();
    // The result is on screen without a click: the main pane shows it, at least 300 px wide, fully loaded.
    const shownWidth = () =>
      page.evaluate(`(() => {
        const img = document.querySelector('.result-pane [data-testid="after-image"]');
        return img && img.complete && img.naturalWidth > 0 ? img.getBoundingClientRect().width : 0;
      })()`) as Promise<number>;
    await expect.poll(shownWidth, { timeout: 60_000 }).toBeGreaterThanOrEqual(300);
    await row.getByText('128×96 → 512×384').waitFor();
    await row.getByRole('button', { name: 'Compare crisp-sample.png' }).waitFor();
    const item = (await ui.ui.service.getQueue()).items[0]!;
    expect(item).toMatchObject({ status: 'done', inputName: 'crisp-sample.png' });
    const meta = await sharp(item.outputPath!).metadata();
    expect([meta.width, meta.height]).toEqual([512, 384]);
    expect(Math.min(meta.width!, meta.height!)).toBeGreaterThanOrEqual(300);
    // The bundled model ran: the output is a real upscale, not a resize of nothing.
    const stats = await sharp(item.outputPath!).stats();
    expect(stats.channels[0]!.stdev).toBeGreaterThan(5);

    expect(await axeViolations(page)).toEqual([]);
    await screenshot(page, 'first-run-offline-done');

    // The result lives only in the data folder (an upload, no output folder) and was never downloaded:
    // Clear finished asks first, and keeping it keeps the file.
    expect(item.outputPath!.startsWith(path.join(ui.dataDir, 'drops') + path.sep)).toBe(true);
    await page.getByRole('button', { name: 'Clear finished' }).click();
    const question = page.getByRole('alertdialog');
    await question.getByText(/^1 result was never downloaded/).waitFor();
    expect(await axeViolations(page)).toEqual([]);
    await question.getByRole('button', { name: 'Clear the others, keep it' }).click();
    await page.getByText('1 result was kept: it was never downloaded.').waitFor();
    expect((await ui.ui.service.getQueue()).items.map((i) => i.id)).toEqual([item.id]);
    expect(existsSync(item.outputPath!)).toBe(true);

    // Downloaded from the question: the bytes are the file on disk, and clearing then asks nothing.
    await page.getByRole('button', { name: 'Clear finished' }).click();
    const download = page.waitForEvent('download');
    await page.getByRole('alertdialog').getByRole('button', { name: 'Download it first' }).click();
    const got = await download;
    expect((await readFile((await got.path())!)).equals(await readFile(item.outputPath!))).toBe(true);
    await expect.poll(async () => (await ui.ui.service.getQueue()).items[0]?.unsaved).toBeUndefined();
    // The page has the news too: the button no longer announces a question (aria-expanded goes away).
    const clear = page.getByRole('button', { name: 'Clear finished' });
    await expect.poll(() => clear.getAttribute('aria-expanded')).toBeNull();
    await clear.click();
    await expect.poll(async () => (await ui.ui.service.getQueue()).items).toEqual([]);
    expect(await page.getByRole('alertdialog').count()).toBe(0);

    expect(outside).toEqual([]);
    expect(problems).toEqual([]);
  });
});
