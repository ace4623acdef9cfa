/**
 * `crisp ui` in headless Chromium with the real app layer and engine: add real images through
 * "Add images", upscale, follow per-item and batch progress, compare, and check the files on disk.
 * Stop mid-batch leaves no partial file; a corrupt file fails in plain words while the others finish.
 */
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import sharp from 'sharp';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { JobItem, ServiceEvent } from '../../app/service/crispService.js';
import { createTestGate, inputPoint } from '../helpers/testGate.js';
import { launchChromium } from './browser.js';
import { FAST_MODEL, LR, SET14, listDir, openUi, screenshot, startUiUnderTest, type UiUnderTest } from './uiHarness.js';

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

const queueRegion = (page: Page) => page.getByRole('region', { name: 'Queue' });

async function chooseOptions(page: Page, scale: string, format: string) {
  await page.getByRole('combobox', { name: 'Model' }).selectOption(FAST_MODEL);
  await page.getByRole('combobox', { name: 'Scale' }).selectOption(scale);
  await page.getByRole('combobox', { name: 'Format' }).selectOption(format);
}

async function addImages(page: Page, files: string[]) {
  await page.getByLabel('Add images').setInputFiles(files);
  await expect
    .poll(() => queueRegion(page).getByRole('list', { name: 'Images' }).getByRole('listitem').count(), {
      timeout: 30_000,
    })
    .toBe(files.length);
}

function recordItems(ui: UiUnderTest): Map<string, number[]> {
  const progress = new Map<string, number[]>();
  ui.ui.service.subscribe((e: ServiceEvent) => {
    if (e.type === 'item') progress.set(e.item.inputName, [...(progress.get(e.item.inputName) ?? []), e.item.percent]);
  });
  return progress;
}

describe('crisp ui, local mode (real engine)', () => {
  it('upscales three images with progress, comparison and correct outputs on disk', async () => {
    current = await startUiUnderTest();
    const progress = recordItems(current);
    const { page, problems } = await openUi(browser, current.ui.server.url);
    await screenshot(page, 'empty');

    // The denoise slider belongs to service-lite-4x only (issue 6).
    await page.getByRole('combobox', { name: 'Model' }).selectOption('service-lite-4x');
    await page.getByRole('slider', { name: 'Denoise strength' }).waitFor();
    await chooseOptions(page, '2', 'webp');
    await page.getByRole('slider', { name: 'Denoise strength' }).waitFor({ state: 'detached' });
    const names = ['baby_LRBI_x4.png', 'bird_LRBI_x4.png', 'butterfly_LRBI_x4.png'];
    await addImages(
      page,
      names.map((n) => path.join(LR, n)),
    );
    await expect.poll(async () => (await current!.ui.service.getSettings()).scale).toBe(2);

    // The running state is shown while the first image is held (test gate), whatever the machine's speed.
    const gate = await createTestGate({ inProcess: true });
    try {
      await gate.hold(inputPoint(names[0]!));
      await page.getByRole('button', { name: 'Upscale' }).click();
      await gate.reached(inputPoint(names[0]!));
      await page.getByText(/^Upscaling: /).waitFor();
    } finally {
      await gate.release(inputPoint(names[0]!));
      await gate.close();
    }

    await page.getByTestId('batch-status').getByText('3 done', { exact: true }).waitFor({ timeout: 90_000 });
    const queue = queueRegion(page);
    await expect.poll(() => queue.getByText(/^Done in /).count()).toBe(3);
    for (const n of names)
      expect(await page.getByRole('progressbar', { name: `${n} progress` }).getAttribute('value')).toBe('100');
    expect(await page.getByRole('progressbar', { name: 'Batch progress' }).getAttribute('value')).toBe('100');
    // Per-item progress reached the UI as it happened, ending at 100 and never going backwards.
    for (const n of names) {
      const seen = progress.get(n) ?? [];
      expect(seen.at(-1)).toBe(100);
      expect(seen).toEqual([...seen].sort((a, b) => a - b));
    }

    // Outputs: right size (input × 2), right format, in the chosen folder.
    const items = (await current.ui.service.getQueue()).items;
    for (const item of items) {
      expect(item.status).toBe('done');
      const meta = await sharp(item.outputPath!).metadata();
      const input = await sharp(path.join(LR, item.inputName)).metadata();
      expect(path.dirname(item.outputPath!)).toBe(current.outDir);
      expect(meta.format).toBe('webp');
      expect([meta.width, meta.height]).toEqual([input.width! * 2, input.height! * 2]);
    }
    expect(await listDir(current.outDir)).toHaveLength(3);

    // The comparison: open, drag the divider, zoom, close with Escape.
    await page.getByRole('button', { name: 'Compare bird_LRBI_x4.png' }).click();
    const dialog = page.getByRole('dialog', { name: 'Compare bird_LRBI_x4.png' });
    await dialog.getByRole('img', { name: /^After/ }).waitFor();
    await dialog.getByRole('img', { name: /^Before/ }).waitFor();
    const slider = dialog.getByRole('slider', { name: 'Compare' });
    const box = (await slider.boundingBox())!;
    await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
    await page.mouse.down();
    await page.mouse.move(box.x - 150, box.y + box.height / 2, { steps: 5 });
    await page.mouse.up();
    expect(Number(await slider.getAttribute('aria-valuenow'))).toBeLessThan(35);
    await slider.press('End');
    expect(await slider.getAttribute('aria-valuenow')).toBe('100');
    await slider.press('Home');
    await page.keyboard.press('ArrowRight');
    expect(await slider.getAttribute('aria-valuenow')).toBe('2');
    await slider.press('End');
    await page.keyboard.press('ArrowLeft');
    await page.keyboard.press('Shift+ArrowLeft');
    // The label shows the real scale (100% = 1:1), so Zoom in multiplies whatever Fit showed by 1.25.
    const zoomLabel = dialog.getByTestId('zoom-label');
    const fitPercent = Number((await zoomLabel.textContent())!.replace(/\D/g, ''));
    await dialog.getByRole('button', { name: 'Zoom in' }).click();
    await expect
      .poll(async () => Number((await zoomLabel.textContent())!.replace(/\D/g, '')) / fitPercent)
      .toBeCloseTo(1.25, 1);
    await slider.press('Home');
    for (let i = 0; i < 25; i++) await slider.press('ArrowRight');
    await screenshot(page, 'comparison');
    await page.keyboard.press('Escape');
    await expect.poll(() => page.getByRole('dialog').count()).toBe(0);
    await page.getByRole('combobox', { name: 'Theme' }).selectOption('dark');
    await screenshot(page, 'dark');

    expect(problems).toEqual([]);
  });

  it('Stop in the middle of a batch leaves only complete outputs', async () => {
    current = await startUiUnderTest();
    const { page } = await openUi(browser, current.ui.server.url);
    await chooseOptions(page, '4', 'png');
    // barbara (720×576) is over one CPU tile's pixel budget (512²), so it is cut into tiles and reaches `tile-1`;
    // the three others are one tile each.
    const names = ['baboon.png', 'lenna.png', 'pepper.png', 'barbara.png'];
    await addImages(
      page,
      names.map((n) => path.join(SET14, n)),
    );
    // Stop while an item is part-way through (held by the test gate in the engine process before its second
    // tile, whatever the machine's speed): its output would be partial if anything were written early.
    const gate = await createTestGate({ inProcess: true });
    try {
      await gate.hold('tile-1');
      await page.getByRole('button', { name: 'Upscale' }).click();
      await gate.reached('tile-1');
      await page
        .getByText(/^Upscaling… [1-9]\d?%$/)
        .first()
        .waitFor({ timeout: 60_000 });
      await screenshot(page, 'running');
      await page.getByRole('button', { name: 'Stop' }).click();
    } finally {
      await gate.release('tile-1');
      await gate.close();
    }
    await expect.poll(async () => (await current!.ui.service.getQueue()).running, { timeout: 30_000 }).toBe(false);

    const items: JobItem[] = (await current.ui.service.getQueue()).items;
    const done = items.filter((i) => i.status === 'done');
    expect(items.filter((i) => i.status === 'cancelled').length).toBeGreaterThan(0);
    await expect.poll(() => queueRegion(page).getByText('Stopped', { exact: true }).count()).toBeGreaterThan(0);
    // Every finished item has its file, no temp file is left, and every file there is a whole, decodable image.
    // (An item whose output landed in the instant Stop was pressed may be reported stopped with its complete
    // file beside the others: outputs are written straight to the folder and renamed into place when whole.)
    const files = await listDir(current.outDir);
    for (const i of done) expect(files).toContain(path.basename(i.outputPath!));
    expect(files.every((f) => /_digital-art-4x_x4\.png$/.test(f))).toBe(true);
    for (const f of files) {
      const meta = await sharp(path.join(current.outDir, f)).metadata();
      expect(meta.width).toBeGreaterThan(0);
      await sharp(path.join(current.outDir, f)).raw().toBuffer();
    }
    for (const i of done) expect((await sharp(i.outputPath!).metadata()).width).toBe(i.outputDimensions!.width);
  });

  it('a corrupt file fails in plain words while the others finish', async () => {
    current = await startUiUnderTest();
    const { page } = await openUi(browser, current.ui.server.url);
    await chooseOptions(page, '2', 'png');
    const broken = path.join(current.dataDir, 'broken.png');
    // A PNG signature followed by garbage: passes a quick look, and is flagged when added (probed), before any work.
    await writeFile(broken, Buffer.concat([Buffer.from([137, 80, 78, 71, 13, 10, 26, 10]), Buffer.alloc(2000, 7)]));
    await page
      .getByLabel('Add images')
      .setInputFiles([path.join(LR, 'head_LRBI_x4.png'), broken, path.join(LR, 'woman_LRBI_x4.png')]);
    const queue = queueRegion(page);
    const row = queue.getByRole('listitem', { name: 'broken.png' });
    await row.getByText('Failed', { exact: true }).waitFor();
    const error = (await row.locator('.item-error').textContent()) ?? '';
    expect(error).toMatch(/^broken\.png is damaged \(/);
    expect(error).not.toMatch(/\bat \S+:\d+|TypeError|ENOENT|undefined/);
    await page.getByRole('alert').filter({ hasText: 'broken.png is damaged' }).waitFor();
    await page.getByRole('button', { name: 'Upscale' }).click();
    await page.getByTestId('batch-status').getByText('2 done · 1 failed', { exact: true }).waitFor({ timeout: 60_000 });
    await expect.poll(() => queue.getByText(/^Done in /).count()).toBe(2);
    await page.getByRole('status').filter({ hasText: 'Finished: 2 of 2 images upscaled.' }).waitFor();
    expect(await listDir(current.outDir)).toHaveLength(2);
  });
});
