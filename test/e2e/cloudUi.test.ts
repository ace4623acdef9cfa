/**
 * `crisp ui` in Cloud mode against a real `crisp serve` (same server code, real models) whose user has
 * few credits: the estimate is shown before starting, the balance drops by exactly the credits each
 * task deducted, and a batch beyond the balance says "Insufficient credits", greys Upscale and changes nothing. A wrong
 * key keeps the connect card with the error under the key field; the picker lists exactly the service's models.
 */
import path from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../server/helpers.js';
import { axeViolations } from './axe.js';
import { launchChromium } from './browser.js';
import { FAST_MODEL, LR, listDir, openUi, screenshot, startUiUnderTest, type UiUnderTest } from './uiHarness.js';

const START_CREDITS = 5;
let browser: Browser;
let server: TestServer;
let ui: UiUnderTest;
let apiKey: string;

beforeAll(async () => {
  server = await startTestServer();
  ({ apiKey } = await server.accounts.addUser({ email: 'few@example.test', credits: START_CREDITS, extraCredits: 0 }));
  ui = await startUiUnderTest({ model: FAST_MODEL, scale: 4, format: 'png' });
  browser = await launchChromium();
});
const cleanups: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const c of cleanups) await c();
  await browser?.close();
  await ui?.cleanup();
  await server?.stop();
});

async function serverBalance(): Promise<number> {
  const users = await server.accounts.listUsers();
  const u = users.find((x) => x.email === 'few@example.test')!;
  return u.credits + u.extraCredits;
}

describe('crisp ui, cloud mode against crisp serve', () => {
  it('shows the estimate, deducts exactly, and refuses a batch beyond the balance', async () => {
    const { page, problems } = await openUi(browser, ui.ui.server.url);
    const cardStates: Record<string, string[]> = {};
    await page.getByRole('radiogroup', { name: 'Mode' }).getByRole('radio', { name: 'Cloud' }).check();
    // Nothing configured: the connect card, not an error.
    const card = page.getByRole('region', { name: 'Connect to an upscaling service' });
    await card.waitFor();
    expect(await page.getByRole('alert').count()).toBe(0);
    await card.getByRole('textbox', { name: 'Service URL' }).fill(server.url);

    // A wrong key: the card stays, and the error sits right under the key field, in view, in plain words.
    const keyField = card.getByRole('textbox', { name: 'API key' });
    await keyField.fill('crisp_wrong_key_0000000000');
    await card.getByRole('button', { name: 'Test connection' }).click();
    const keyError = card.getByRole('alert');
    await keyError.getByText(/did not accept the API key/).waitFor();
    expect(await keyField.getAttribute('aria-invalid')).toBe('true');
    expect(await keyField.getAttribute('aria-describedby')).toBe(await keyError.getAttribute('id'));
    const fieldBox = (await keyField.boundingBox())!;
    const errorBox = (await keyError.boundingBox())!;
    expect(errorBox.y).toBeGreaterThanOrEqual(fieldBox.y + fieldBox.height - 1);
    expect(errorBox.y - (fieldBox.y + fieldBox.height)).toBeLessThan(40);
    expect(errorBox.y + errorBox.height).toBeLessThanOrEqual(860);
    expect(await keyError.textContent()).not.toMatch(/^Unauthorized$|HTTP 401/);
    // Only this one error on the page, and the card (not a sidebar copy) holds the form.
    expect(await page.getByRole('alert').count()).toBe(1);
    expect(await page.getByRole('textbox', { name: 'API key' }).count()).toBe(1);
    await screenshot(page, 'cloud-wrong-key');
    cardStates.wrongKey = await axeViolations(page);

    await keyField.fill(apiKey);
    await card.getByRole('button', { name: 'Test connection' }).click();
    await page
      .getByTestId('connection')
      .getByText(`Connected as few@example.test: ${START_CREDITS} credits available.`)
      .waitFor();
    expect(await page.getByRole('alert').count()).toBe(0);

    // The picker offers exactly the service's models (its get-capabilities list), not every contract model.
    const offered = () =>
      page
        .getByRole('combobox', { name: 'Model' })
        .locator('option')
        .evaluateAll((options) => options.map((o) => (o as unknown as { value: string }).value));
    await expect.poll(offered).toEqual(['service-lite-4x', 'clear-boost-4x', 'crystal-plus-4x', 'digital-art-4x']);
    cardStates.connected = await axeViolations(page);
    expect(cardStates).toEqual({ wrongKey: [], connected: [] });

    const credits = page.getByRole('region', { name: 'Credits' });
    await credits.getByTestId('balance').getByText(`${START_CREDITS} credits`).waitFor();

    // Two images at ×4: the price table says 2 credits each.
    await page
      .getByLabel('Add images')
      .setInputFiles([path.join(LR, 'bird_LRBI_x4.png'), path.join(LR, 'head_LRBI_x4.png')]);
    await credits.getByTestId('estimate').getByText('4 credits for 2 images').waitFor();
    await screenshot(page, 'cloud-estimate');
    await page.getByRole('button', { name: 'Upscale' }).click();
    await page.getByTestId('batch-status').getByText('2 done', { exact: true }).waitFor({ timeout: 90_000 });

    const items = (await ui.ui.service.getQueue()).items;
    expect(items.map((i) => i.status)).toEqual(['done', 'done']);
    const deducted = items.reduce((s, i) => s + (i.creditsDeducted ?? 0), 0);
    expect(deducted).toBe(4);
    expect(await serverBalance()).toBe(START_CREDITS - deducted);
    await credits
      .getByTestId('balance')
      .getByText(`${START_CREDITS - deducted} credit`, { exact: true })
      .waitFor();
    await credits.getByTestId('deducted').getByText('4 credits').waitFor();
    expect(await listDir(ui.outDir)).toHaveLength(2);
    await credits.scrollIntoViewIfNeeded();
    await screenshot(page, 'cloud-credits');

    // One more image needs 2 credits; 1 is left.
    await page.getByRole('button', { name: 'Clear finished' }).click();
    await page.getByLabel('Add images').setInputFiles([path.join(LR, 'woman_LRBI_x4.png')]);
    await credits
      .getByRole('alert')
      .getByText(/Insufficient credits/)
      .waitFor();
    // The bar says why nothing can start (never "Ready"), and Upscale is greyed: it would only be refused.
    await page
      .getByTestId('batch-status')
      .getByText(/not enough credits: these images need 2 credits and the balance is 1 credit\b/)
      .waitFor();
    expect(await page.getByRole('button', { name: 'Upscale' }).isDisabled()).toBe(true);
    expect((await ui.ui.service.getQueue()).running).toBe(false);
    await credits.scrollIntoViewIfNeeded();
    await screenshot(page, 'cloud-insufficient');
    expect(await serverBalance()).toBe(START_CREDITS - deducted);
    expect(await listDir(ui.outDir)).toHaveLength(2);
    await credits
      .getByTestId('balance')
      .getByText(`${START_CREDITS - deducted} credit`, { exact: true })
      .waitFor();
    expect(problems.filter((p) => !/status of 4\d\d/.test(p))).toEqual([]);
  });

  it('a saved model the service does not run stays visible as such, and nothing starts until one of its models is chosen', async () => {
    const second = await server.accounts.addUser({ email: 'more@example.test', credits: 50, extraCredits: 0 });
    // Its own app instance: the test above starts from nothing configured, whichever runs first (--sequence.shuffle).
    const own = await startUiUnderTest({ model: FAST_MODEL, scale: 4, format: 'png' });
    cleanups.push(() => own.cleanup());
    await own.ui.service.updateSettings({ mode: 'cloud', baseUrl: server.url, model: 'natural-max-4x' });
    await own.ui.service.setApiKey(second.apiKey);
    await own.ui.service.addPaths([path.join(LR, 'bird_LRBI_x4.png')]);
    const { page, problems } = await openUi(browser, own.ui.server.url);
    const picker = page.getByRole('combobox', { name: 'Model' });
    const options = () =>
      picker.locator('option').evaluateAll((all) =>
        all.map((o) => {
          const e = o as unknown as { value: string; textContent: string; disabled: boolean };
          return [e.value, e.textContent, e.disabled];
        }),
      );
    await expect.poll(options).toEqual([
      ['service-lite-4x', 'Service Lite', false],
      ['clear-boost-4x', 'Clear Boost', false],
      ['crystal-plus-4x', 'Crystal Plus', false],
      ['digital-art-4x', 'Digital Art', false],
      ['natural-max-4x', 'Natural Max (not on this service)', true],
    ]);
    await page.getByText('This service does not run this model').waitFor();
    const upscale = page.getByRole('button', { name: 'Upscale', exact: true });
    expect(await upscale.isDisabled()).toBe(true);

    // Started anyway (a script, through the service): the service's 400 names its models folder and a
    // server command; the row says what happened in a sentence, without either.
    await own.ui.service.start();
    const row = page.getByRole('region', { name: 'Queue' }).getByRole('listitem', { name: 'bird_LRBI_x4.png' });
    await row.getByText('Failed', { exact: true }).waitFor({ timeout: 30_000 });
    const raw = (await own.ui.service.getQueue()).items.find((i) => i.inputName === 'bird_LRBI_x4.png')!;
    expect(raw.errorCode).toBe('bad-request');
    expect(raw.error).toMatch(/^Bad Request: /);
    expect(await row.locator('.item-error').textContent()).toBe(
      'The service refused bird_LRBI_x4.png with these settings. Choose another model, scale or format (or switch off Enhance faces), or use Local mode.',
    );
    expect(await page.locator('body').textContent()).not.toMatch(/crisp models|\.onnx|\/tmp\/|\/work\//);
    // With a waiting image and one of the service's models, Upscale is on again.
    await own.ui.service.addPaths([path.join(LR, 'head_LRBI_x4.png')]);
    await picker.selectOption('digital-art-4x');
    await expect.poll(() => upscale.isDisabled()).toBe(false);
    // The unavailable choice is gone once another is made: the list is exactly the service's again.
    await expect
      .poll(async () => (await options()).map((o) => o[0]))
      .toEqual(['service-lite-4x', 'clear-boost-4x', 'crystal-plus-4x', 'digital-art-4x']);
    expect(await axeViolations(page)).toEqual([]);
    expect(problems).toEqual([]);
  });
});
