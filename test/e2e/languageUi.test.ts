/**
 * The interface in German, in real Chromium through `crisp ui` (real app layer, real engine): a browser
 * whose language is German gets the German interface with `<html lang="de">`, an upscale runs to the
 * end in German, a damaged image is refused in a German sentence (the engine's code and params, worded by the
 * renderer), axe-core finds no violations, and the Language setting switches back to English.
 */
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { axeViolations } from './axe.js';
import { launchChromium } from './browser.js';
import { chooseFiles, FAST_MODEL, LR, startUiUnderTest, type UiUnderTest } from './uiHarness.js';

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

describe('crisp ui in German', () => {
  it('follows a German browser, upscales in German with no axe violations, and switches to English in settings', async () => {
    // The "system" language of a browser page is its navigator.languages, which the locale sets.
    const page = await browser.newPage({ viewport: { width: 1280, height: 860 }, locale: 'de-DE' });
    const problems: string[] = [];
    page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
    await page.goto(ui.ui.server.url);
    await page.getByRole('heading', { name: 'Hochskalieren in drei Schritten' }).waitFor();
    expect(await page.evaluate('document.documentElement.lang')).toBe('de');
    expect(await page.getByRole('combobox', { name: 'Sprache' }).inputValue()).toBe('system');
    const states: Record<string, string[]> = { empty: await axeViolations(page) };

    await chooseFiles(page, () => page.getByRole('button', { name: 'Bilder auswählen …' }).click(), [
      path.join(LR, 'bird_LRBI_x4.png'),
    ]);
    const bar = page.getByTestId('batch-status');
    await bar.getByText('Bereit: 1 wartend', { exact: true }).waitFor();
    states.queued = await axeViolations(page);
    await page.getByRole('button', { name: 'Hochskalieren', exact: true }).click();
    await bar.getByText('1 fertig', { exact: true }).waitFor({ timeout: 90_000 });
    await page.getByText(/^Fertig in \d/).waitFor();
    states.done = await axeViolations(page);
    // A PNG cut in half: the engine finds it damaged; the row says so in German.
    const dir = await mkdtemp(path.join(os.tmpdir(), 'crisp-e2e-de-'));
    const damaged = path.join(dir, 'damaged.png');
    const png = await readFile(path.join(LR, 'baby_LRBI_x4.png'));
    await writeFile(damaged, png.subarray(0, Math.floor(png.length / 2)));
    await chooseFiles(page, () => page.getByRole('button', { name: 'Bilder auswählen …' }).click(), [damaged]);
    // The row says it (an alert may say it too, for a moment): the row is what stays.
    await page
      .getByRole('listitem', { name: 'damaged.png' })
      .getByText(
        'damaged.png ist beschädigt: Exportieren Sie es neu oder laden Sie es noch einmal herunter, und fügen Sie es dann neu hinzu.',
        { exact: true },
      )
      .waitFor();
    states.damaged = await axeViolations(page);
    await page.getByRole('button', { name: 'Tastenkürzel' }).click();
    await page.getByRole('dialog', { name: 'Tastenkürzel' }).waitFor();
    states.shortcuts = await axeViolations(page);
    await page.keyboard.press('Escape');

    await page.getByRole('combobox', { name: 'Sprache' }).selectOption('en');
    await page.getByRole('heading', { name: 'Queue' }).waitFor();
    expect(await page.evaluate('document.documentElement.lang')).toBe('en');
    // The page switches at once; the setting is saved by a request that may still be on its way.
    await expect.poll(async () => (await ui.ui.service.getSettings()).language).toBe('en');

    expect(states).toEqual({ empty: [], queued: [], done: [], damaged: [], shortcuts: [] });
    expect(problems).toEqual([]);
  });
});
