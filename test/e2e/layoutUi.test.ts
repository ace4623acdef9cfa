/**
 * Issue 26, layout and language, in real Chromium through `crisp ui` (real app layer, real engine): the German
 * interface fits its columns at 1280 and 360 px (no element of the sidebar is wider than its column or cuts
 * its own content: scrollWidth/clientWidth measured per element, every <details> opened); file names stay
 * visible at every width from 360 to 1920 px (768 px included); the watched folder's path field is at least 240 px
 * wide at 360, 768 and 1280 px; axe-core finds no violations in German with results shown.
 */
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { axeViolations } from './axe.js';
import { launchChromium } from './browser.js';
import { FAST_MODEL, LR, screenshot, startUiUnderTest, type UiUnderTest } from './uiHarness.js';

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

/**
 * Elements of the sidebar that are wider than the sidebar's content box, or whose content is cut
 * (scrollWidth > clientWidth without being a scroll container on purpose), as readable strings.
 */
async function sidebarOverflow(page: Page): Promise<string[]> {
  return (await page.evaluate(`(() => {
    const panel = document.querySelector('aside.panel');
    const cs = getComputedStyle(panel);
    const box = panel.getBoundingClientRect();
    const left = box.left + parseFloat(cs.paddingLeft) + parseFloat(cs.borderLeftWidth);
    const right = box.right - parseFloat(cs.paddingRight) - parseFloat(cs.borderRightWidth);
    const out = [];
    const name = (el) => el.tagName.toLowerCase() + (el.id ? '#' + el.id : '') + (el.className && typeof el.className === 'string' ? '.' + el.className.trim().replace(/\\s+/g, '.') : '') + ' "' + (el.textContent || el.value || '').trim().slice(0, 30) + '"';
    if (panel.scrollWidth > panel.clientWidth + 1) out.push('sidebar scrolls sideways: ' + panel.scrollWidth + ' > ' + panel.clientWidth);
    for (const el of panel.querySelectorAll('*')) {
      const r = el.getBoundingClientRect();
      if (r.width === 0 || r.height === 0 || el.closest('.visually-hidden')) continue;
      if (r.right > right + 1 || r.left < left - 1) out.push(name(el) + ' spans [' + Math.round(r.left) + ', ' + Math.round(r.right) + '] in [' + Math.round(left) + ', ' + Math.round(right) + ']');
      else if (el.clientWidth > 0 && el.scrollWidth > el.clientWidth + 1 && getComputedStyle(el).overflowX !== 'auto') out.push(name(el) + ' cuts its content: ' + el.scrollWidth + ' > ' + el.clientWidth);
    }
    return out.slice(0, 12);
  })()`)) as string[];
}

/** Each queue row's file name: how much of it is visible (px) and how wide it would be in full. */
async function nameWidths(page: Page): Promise<{ name: string; shown: number; full: number }[]> {
  return (await page.evaluate(`[...document.querySelectorAll('.item-name')].map((el) => ({
    name: el.textContent, shown: Math.round(el.getBoundingClientRect().width), full: el.scrollWidth }))`)) as {
    name: string;
    shown: number;
    full: number;
  }[];
}

const openAllDetails = (page: Page) =>
  page.evaluate(`document.querySelectorAll('aside.panel details').forEach((d) => { d.open = true; })`);

describe('crisp ui: layout and language', () => {
  it('German fits 1280 and 360 px with every section open; names stay visible from 360 to 1920 px; axe clean', async () => {
    const page = await browser.newPage({ viewport: { width: 1280, height: 860 }, locale: 'de-DE' });
    const problems: string[] = [];
    page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
    await page.goto(ui.ui.server.url);
    await page.getByRole('combobox', { name: 'Modell' }).waitFor();
    await page
      .getByLabel('Bilder hinzufügen')
      .setInputFiles(['bird_LRBI_x4.png', 'woman_LRBI_x4.png'].map((n) => path.join(LR, n)));
    const bar = page.getByTestId('batch-status');
    await bar.getByText('Bereit: 2 wartend', { exact: true }).waitFor();
    await page.getByRole('button', { name: 'Hochskalieren', exact: true }).click();
    await bar.getByText('2 fertig', { exact: true }).waitFor({ timeout: 90_000 });
    await page.getByRole('region', { name: /^Ergebnis: / }).waitFor();
    await openAllDetails(page);

    const cut: Record<number, string[]> = {};
    for (const width of [1280, 360]) {
      await page.setViewportSize({ width, height: 860 });
      cut[width] = await sidebarOverflow(page);
    }
    expect(cut).toEqual({ 1280: [], 360: [] });

    // The model description is German too (the catalog's English is not shown in German).
    expect(await page.locator('aside.panel').textContent()).toContain('Schnelles Modell für Illustrationen');

    const hidden: Record<number, string[]> = {};
    for (const width of [360, 720, 768, 800, 880, 1024, 1440, 1920]) {
      await page.setViewportSize({ width, height: 860 });
      hidden[width] = (await nameWidths(page))
        .filter((n) => n.shown < Math.min(n.full, 100))
        .map((n) => `${n.name}: ${n.shown} of ${n.full} px`);
    }
    expect(hidden).toEqual({ 360: [], 720: [], 768: [], 800: [], 880: [], 1024: [], 1440: [], 1920: [] });
    // The watched folder's path field is wide enough to read a typed path at every width (it was 26–62 px).
    const pathField = page.getByRole('textbox', { name: 'Zu überwachender Ordner' });
    const fieldWidths: Record<number, number> = {};
    for (const width of [360, 768, 1280]) {
      await page.setViewportSize({ width, height: 860 });
      fieldWidths[width] = Math.round((await pathField.boundingBox())?.width ?? 0);
    }
    expect(
      Object.values(fieldWidths).every((w) => w >= 240),
      JSON.stringify(fieldWidths),
    ).toBe(true);
    await page.setViewportSize({ width: 768, height: 860 });
    await screenshot(page, 'german-768');

    await page.setViewportSize({ width: 1280, height: 860 });
    expect(await axeViolations(page)).toEqual([]);
    expect(problems).toEqual([]);
  });
});
