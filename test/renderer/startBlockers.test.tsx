// @vitest-environment jsdom
/**
 * Issue 41 item 7: the bar never says "Ready" beside images that can only be refused — Twice in Cloud (a service
 * upscales once per task) and outputs over the size limit (checked by the app layer with the engine's own rules,
 * from the sizes read when the images were added). Upscale is greyed in both, and comes back once fixed.
 */
import { cleanup, screen, waitFor } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import sharp from 'sharp';
import { afterEach, describe, expect, it } from 'vitest';
import { closeFakes } from './fakeService.js';
import { pngFile, renderApp } from './renderApp.js';

afterEach(async () => {
  cleanup();
  await closeFakes();
});

const status = () => screen.getByTestId('batch-status').textContent ?? '';
const upscale = () => screen.getByRole('button', { name: 'Upscale' }) as HTMLButtonElement;

describe('the bar when nothing can start', () => {
  it('Cloud with Twice: says double upscale is Local only and greys Upscale; Once makes it Ready', async () => {
    const user = userEvent.setup();
    const { fake } = await renderApp({ balance: 100, apiKey: 'k' });
    await user.click(await screen.findByRole('radio', { name: 'Cloud' }));
    await user.upload(screen.getByLabelText('Add images'), [pngFile('a.png')]);
    await user.selectOptions(screen.getByRole('combobox', { name: 'Passes' }), '2');
    await waitFor(() =>
      expect(status()).toBe(
        'Cannot start: double upscale runs only in Local mode: choose Once under Passes, or switch to Local (1 waiting)',
      ),
    );
    expect(upscale().disabled).toBe(true);
    await user.selectOptions(screen.getByRole('combobox', { name: 'Passes' }), '1');
    await waitFor(() => expect(status()).toBe('Ready: 1 waiting'));
    expect(upscale().disabled).toBe(false);
    expect(fake.items.map((i) => i.status)).toEqual(['queued']);
  });

  it('an output over the limit (2100 px wide ×8 as WebP: 16800 px, WebP holds 16383): not Ready; PNG is', async () => {
    const user = userEvent.setup();
    const { fake } = await renderApp();
    const wide = await sharp({ create: { width: 2100, height: 4, channels: 3, background: '#808080' } })
      .png()
      .toBuffer();
    await user.selectOptions(await screen.findByRole('combobox', { name: 'Scale' }), '8');
    await user.selectOptions(screen.getByRole('combobox', { name: 'Format' }), 'webp');
    await user.upload(screen.getByLabelText('Add images'), [
      new File([new Uint8Array(wide)], 'wide.png', { type: 'image/png' }),
    ]);
    await waitFor(() =>
      expect(status()).toBe(
        'Cannot start: the waiting image would come out over the output size limit: choose a smaller scale or size (PNG holds the largest sides) (1 waiting)',
      ),
    );
    expect(upscale().disabled).toBe(true);
    await user.selectOptions(screen.getByRole('combobox', { name: 'Format' }), 'png');
    await waitFor(() => expect(status()).toBe('Ready: 1 waiting'));
    expect(upscale().disabled).toBe(false);
    // One image that fits beside it is enough to start (the other is refused on its own row when it runs).
    await user.selectOptions(screen.getByRole('combobox', { name: 'Format' }), 'webp');
    await waitFor(() => expect(status()).toMatch(/^Cannot start/));
    await user.upload(screen.getByLabelText('Add images'), [pngFile('small.png')]);
    await waitFor(() => expect(status()).toBe('Ready: 2 waiting'));
    expect(fake.items.map((i) => i.status)).toEqual(['queued', 'queued']);
  });
});
