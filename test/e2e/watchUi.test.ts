/**
 * Issue 41 item 2 in real Chromium through `crisp ui`: a Cloud watched folder's row says where it runs, what an
 * image costs and that nothing is sent until allowed, with a per-folder "Allow spending"; axe-core finds nothing
 * in that state or after allowing.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { axeViolations } from './axe.js';
import { launchChromium } from './browser.js';
import { FAST_MODEL, openUi, startUiUnderTest, type UiUnderTest } from './uiHarness.js';

let browser: Browser;
let ui: UiUnderTest;
let inbox: string;

beforeAll(async () => {
  inbox = await mkdtemp(path.join(os.tmpdir(), 'crisp-watch-ui-'));
  ui = await startUiUnderTest({ model: FAST_MODEL });
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
  await ui?.cleanup();
  await rm(inbox, { recursive: true, force: true });
});

describe('crisp ui: a Cloud watched folder', () => {
  it('says Cloud and the price per image, asks before spending; axe clean before and after allowing', async () => {
    const { page, problems } = await openUi(browser, ui.ui.server.url);
    const panel = page.getByTestId('watch-folders');
    await panel.getByRole('textbox', { name: 'Folder to watch' }).fill(inbox);
    await panel.getByRole('combobox', { name: 'Preset for the watched folder' }).selectOption('Illustrations');
    await panel.getByRole('combobox', { name: 'Where the watched folder runs' }).selectOption('cloud');
    await panel.getByRole('button', { name: 'Watch', exact: true }).click();
    const row = panel.getByTestId('watch-row');
    await row.getByText(/^Nothing is sent until you allow it: each image costs \d+ credits?\.$/).waitFor();
    expect(await row.textContent()).toMatch(/Cloud, \d+ credits? per image/);
    const asking = await axeViolations(page);
    await row.getByRole('button', { name: `Allow spending credits for ${inbox}` }).click();
    await expect.poll(async () => (await row.textContent())?.includes('Nothing is sent')).toBe(false);
    const allowed = await axeViolations(page);
    expect({ asking, allowed }).toEqual({ asking: [], allowed: [] });
    expect(problems).toEqual([]);
    await page.close();
  });
});
