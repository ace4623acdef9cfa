/**
 * Issue 41 item 9, in real Chromium through `crisp ui` (real engine, a real model): after a run of several images
 * the result's title and zoom bar are in view (the queue's running row had scrolled them off the top), and a
 * portrait result at 1:1 is seen through the whole pane, not through its fitted slot; axe-core finds nothing.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import sharp from 'sharp';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { axeViolations } from './axe.js';
import { launchChromium } from './browser.js';
import { FAST_MODEL, openUi, SET14, startUiUnderTest, type UiUnderTest } from './uiHarness.js';

let browser: Browser;
let ui: UiUnderTest;
let inputs: string;
/** Portrait crops of barbara: 60 × 120 each, 240 × 480 at ×4. */
const NAMES = ['tall-1.png', 'tall-2.png', 'tall-3.png', 'tall-4.png'];

beforeAll(async () => {
  inputs = await mkdtemp(path.join(os.tmpdir(), 'crisp-layout-in-'));
  for (const [i, name] of NAMES.entries())
    await sharp(path.join(SET14, 'barbara.png'))
      .extract({ left: 100 + 80 * i, top: 100, width: 60, height: 120 })
      .png()
      .toFile(path.join(inputs, name));
  ui = await startUiUnderTest({ model: FAST_MODEL, scale: 4, format: 'png' });
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
  await ui?.cleanup();
  await rm(inputs, { recursive: true, force: true });
});

/** A box in CSS px (page-side code as text: this tsconfig has no DOM types). */
type Box = { top: number; bottom: number; left: number; right: number; width: number; height: number };
const rectOf = (page: Page, selector: string) =>
  page.evaluate(`(() => {
    const el = document.querySelector(${JSON.stringify(selector)});
    if (!el) return null;
    const r = el.getBoundingClientRect();
    return { top: r.top, bottom: r.bottom, left: r.left, right: r.right, width: r.width, height: r.height };
  })()`) as Promise<Box | null>;

describe('crisp ui: the result after a run', () => {
  it('keeps the title and zoom bar in view after a batch; 1:1 of a portrait result uses the pane', async () => {
    const { page, problems } = await openUi(browser, ui.ui.server.url);
    await page.setViewportSize({ width: 1280, height: 720 });
    await page.getByLabel('Add images').setInputFiles(NAMES.map((n) => path.join(inputs, n)));
    await page.getByTestId('batch-status').getByText('Ready: 4 waiting', { exact: true }).waitFor();
    await page.getByRole('button', { name: 'Upscale', exact: true }).click();
    await page.getByTestId('batch-status').getByText('4 done', { exact: true }).waitFor({ timeout: 120_000 });

    const pane = page.getByRole('region', { name: /^Result: tall-/ });
    await pane.waitFor();
    await pane.getByRole('button', { name: 'Actual pixels 1:1' }).waitFor();
    // The title and the zoom bar lie inside the scrolled main pane's visible part.
    await expect
      .poll(async () => {
        const [content, title, zoom] = await Promise.all([
          rectOf(page, '.content'),
          rectOf(page, '.result-pane .compare-title'),
          rectOf(page, '.result-pane .zoom-controls'),
        ]);
        return !!content && !!title && !!zoom && title.top >= content.top - 0.5 && zoom.top >= content.top - 0.5;
      })
      .toBe(true);

    const frame = (await rectOf(page, '.result-pane .viewport-frame'))!;
    const fitted = (await rectOf(page, '.result-pane .viewport'))!;
    // Portrait: the fitted view is narrower than the pane.
    expect(fitted.width).toBeLessThan(frame.width * 0.75);
    await pane.getByRole('button', { name: 'Actual pixels 1:1' }).click();
    await pane.getByTestId('zoom-label').getByText('100%', { exact: true }).waitFor();
    const actual = (await rectOf(page, '.result-pane .viewport'))!;
    expect(Math.round(actual.width)).toBe(Math.round(frame.width));
    expect(Math.round(actual.height)).toBe(Math.round(fitted.height));
    // Still one image pixel per pixel: 240 px wide on this 1× page.
    const after = (await rectOf(page, '.result-pane [data-testid="after-image"]'))!;
    expect(Math.abs(after.width - 240)).toBeLessThanOrEqual(1);
    const axe = await axeViolations(page);
    // Fit brings back the fitted view.
    await pane.getByRole('button', { name: 'Fit', exact: true }).click();
    await expect
      .poll(async () => Math.round((await rectOf(page, '.result-pane .viewport'))!.width))
      .toBe(Math.round(fitted.width));

    expect(axe).toEqual([]);
    expect(problems).toEqual([]);
    await page.close();
  });
});
