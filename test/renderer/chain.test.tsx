// @vitest-environment jsdom
/**
 * Imported models in the picker: licence shown with a mark on non-commercial ones; a 1× restoration model can be
 * chosen to run before the upscaler (the chain), and only 1× models are offered for it.
 */
import { cleanup, screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { afterEach, describe, expect, it } from 'vitest';
import { closeFakes } from './fakeService.js';
import { renderApp } from './renderApp.js';

afterEach(async () => {
  cleanup();
  await closeFakes();
});

describe('restoration model before the upscaler', () => {
  it('offers imported 1× models only, stores the choice, and marks non-commercial licences', async () => {
    const user = userEvent.setup();
    const { fake } = await renderApp();
    await user.click(await screen.findByText('Custom models (0)'));
    const upload = screen.getByLabelText('Import a model file');
    await user.upload(upload, new File([new Uint8Array(64)], 'anime.pth'));
    await screen.findByRole('list', { name: 'Imported models' });
    // A 4× model is no restorer: no chain control yet.
    expect(screen.queryByRole('combobox', { name: 'Restore first with' })).toBeNull();

    await user.upload(upload, new File([new Uint8Array(64)], '1x-dejpeg-NC.pth'));
    const pre = await screen.findByRole('combobox', { name: 'Restore first with' });
    expect(
      within(pre)
        .getAllByRole('option')
        .map((o) => o.textContent),
    ).toEqual(['Nothing (upscale only)', '1x-dejpeg-NC']);
    await user.selectOptions(pre, 'custom:1x-dejpeg-NC');
    await waitFor(() => expect(fake.settings.preModel).toBe('custom:1x-dejpeg-NC'));

    const items = within(screen.getByRole('list', { name: 'Imported models' })).getAllByRole('listitem');
    expect(items[0]!.textContent).toContain('licence: unknown');
    expect(items[0]!.textContent).not.toContain('NC');
    expect(items[1]!.textContent).toContain('licence: CC-BY-NC-4.0 (non-commercial)');
    expect(within(items[1]!).getByTitle('non-commercial use only').textContent).toBe(' NC');

    await user.selectOptions(pre, '');
    await waitFor(() => expect(fake.settings.preModel).toBeNull());
  });

  it('is not offered in Cloud mode', async () => {
    const user = userEvent.setup();
    await renderApp({ settings: { mode: 'cloud' } });
    await user.click(await screen.findByText(/^Custom models/));
    expect(screen.queryByRole('combobox', { name: 'Restore first with' })).toBeNull();
  });
});
