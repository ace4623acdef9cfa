/**
 * Issue 41 items 7, 8 and 10 in real Chromium through `crisp ui`: the skip link is the first Tab stop and shows
 * when focused; a refused output folder is answered beside its field, inside the window; an output over the
 * size limit makes the bar say why nothing can start; axe-core finds nothing in any of these states.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import sharp from 'sharp';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { axeViolations } from './axe.js';
import { launchChromium } from './browser.js';
import { FAST_MODEL, openUi, startUiUnderTest, type UiUnderTest } from './uiHarness.js';

let browser: Browser;
let ui: UiUnderTest;
let inputs: string;

beforeAll(async () => {
  inputs = await mkdtemp(path.join(os.tmpdir(), 'crisp-edges-'));
  await sharp({ create: { width: 2100, height: 4, channels: 3, background: '#808080' } })
    .png()
    .toFile(path.join(inputs, 'wide.png'));
  ui = await startUiUnderTest({ model: FAST_MODEL, scale: 8, format: 'webp' });
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
  await ui?.cleanup();
  await rm(inputs, { recursive: true, force: true });
});

const rect = (page: Page, selector: string) =>
  page.evaluate(`(() => {
    const r = document.querySelector(${JSON.stringify(selector)}).getBoundingClientRect();
    return { top: r.top, bottom: r.bottom, left: r.left, right: r.right };
  })()`) as Promise<{ top: number; bottom: number; left: number; right: number }>;

describe('crisp ui: rough edges', () => {
  it('skip link, a refused output folder beside its field, a bar that says why nothing can start; axe clean', async () => {
    const { page, problems } = await openUi(browser, ui.ui.server.url);
    const axe: Record<string, string[]> = {};

    await page.keyboard.press('Tab');
    const skip = page.getByRole('link', { name: 'Skip to images and results' });
    expect(
      await skip.evaluate((el) => el === (el.ownerDocument as unknown as { activeElement: unknown }).activeElement),
    ).toBe(true);
    const shown = await rect(page, '.skip-link');
    expect(shown.top).toBeGreaterThanOrEqual(0);
    axe.skip = await axeViolations(page);
    await page.keyboard.press('Enter');
    expect(await page.evaluate(`document.activeElement && document.activeElement.id`)).toBe('main');

    const field = page.getByRole('textbox', { name: 'Output folder' });
    await field.fill('relative/out');
    await field.press('Enter');
    const reason = page.locator('.field').filter({ has: field }).getByRole('alert');
    await reason.waitFor();
    expect(await field.inputValue()).toBe('relative/out');
    // In the window, right under the field.
    const [f, r] = [await rect(page, 'input[aria-invalid="true"]'), await rect(page, '.field [role="alert"]')];
    expect(r.top).toBeGreaterThanOrEqual(f.bottom - 1);
    expect(r.bottom).toBeLessThanOrEqual(page.viewportSize()!.height);
    axe.folder = await axeViolations(page);

    await page.getByLabel('Add images').setInputFiles([path.join(inputs, 'wide.png')]);
    await page
      .getByTestId('batch-status')
      .getByText(/^Cannot start: the waiting image would come out over the output size limit/)
      .waitFor();
    expect(await page.getByRole('button', { name: 'Upscale', exact: true }).isDisabled()).toBe(true);
    axe.tooLarge = await axeViolations(page);

    expect(axe).toEqual({ skip: [], folder: [], tooLarge: [] });
    // The refusal is the bridge's 422 answer, which Chromium logs as a failed resource: expected, nothing else.
    expect(problems.filter((p) => !/status of 422/.test(p))).toEqual([]);
    await page.close();
  });
});
