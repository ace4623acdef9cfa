// @vitest-environment jsdom
/** The model picker's downloads and the denoise slider (issue 6), against the in-memory service. */
import { act, cleanup, fireEvent, screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { afterEach, describe, expect, it } from 'vitest';
import { closeFakes } from './fakeService.js';
import { renderApp } from './renderApp.js';

afterEach(async () => {
  cleanup();
  await closeFakes();
});

describe('model downloads', () => {
  it('downloads a missing model with a progress bar, then offers it in the picker', async () => {
    const user = userEvent.setup();
    const { fake } = await renderApp({ notInstalled: ['natural-max-4x', 'service-standard-4x'] });
    await user.click(await screen.findByText('Download models (2 not installed)'));
    const list = screen.getByRole('list', { name: 'Models to download' });
    expect(within(list).getAllByRole('listitem')).toHaveLength(2);

    await user.click(within(list).getByRole('button', { name: 'Download Natural Max' }));
    expect(fake.calls.filter((c) => c.method === 'downloadModel')).toEqual([
      { method: 'downloadModel', args: ['natural-max-4x'] },
    ]);
    const bar = (await screen.findByRole('progressbar', { name: 'Downloading Natural Max' })) as HTMLProgressElement;
    expect(within(list).queryByRole('button', { name: 'Download Natural Max' })).toBeNull();
    // The other model can still be downloaded meanwhile.
    expect(within(list).getByRole('button', { name: 'Download Service Standard' })).toBeTruthy();

    act(() => fake.progressDownload('natural-max-4x', 500));
    await waitFor(() => expect(bar.value).toBe(500));
    expect(bar.max).toBe(1000);

    await act(() => fake.finishDownload('natural-max-4x'));
    await waitFor(() => expect(screen.queryByRole('progressbar', { name: 'Downloading Natural Max' })).toBeNull());
    await waitFor(() => expect(screen.getByText('Download models (1 not installed)')).toBeTruthy());
    const option = within(screen.getByRole('combobox', { name: 'Model' })).getByRole('option', {
      name: 'Natural Max',
    }) as HTMLOptionElement;
    expect(option.disabled).toBe(false);
    expect(await screen.findByText('Natural Max is installed.')).toBeTruthy();
  });

  it('says why a download failed and offers it again', async () => {
    const user = userEvent.setup();
    const { fake } = await renderApp({ notInstalled: ['natural-max-4x'] });
    await user.click(await screen.findByText('Download models (1 not installed)'));
    await user.click(screen.getByRole('button', { name: 'Download Natural Max' }));
    await screen.findByRole('progressbar', { name: 'Downloading Natural Max' });
    await act(() =>
      fake.finishDownload(
        'natural-max-4x',
        'Could not install Natural Max (natural-max-4x): cannot reach github.com (are you offline?)',
      ),
    );
    expect((await screen.findAllByText(/cannot reach github.com/)).length).toBeGreaterThan(0);
    expect(screen.getByRole('button', { name: 'Download Natural Max' })).toBeTruthy();
  });

  it('offers no downloads in Cloud mode', async () => {
    const user = userEvent.setup();
    await renderApp({ notInstalled: ['natural-max-4x'] });
    expect(await screen.findByText('Download models (1 not installed)')).toBeTruthy();
    await user.click(within(screen.getByRole('radiogroup', { name: 'Mode' })).getByRole('radio', { name: 'Cloud' }));
    await waitFor(() => expect(screen.queryByText(/Download models/)).toBeNull());
    expect(screen.queryByRole('button', { name: /^Download / })).toBeNull();
  });
});

describe('denoise slider', () => {
  it('appears only for service-lite-4x in Local mode and stores its value', async () => {
    const user = userEvent.setup();
    const { fake } = await renderApp();
    const model = await screen.findByRole('combobox', { name: 'Model' });
    await waitFor(() => expect(within(model).getAllByRole('option').length).toBeGreaterThan(5));
    expect(screen.queryByRole('slider', { name: 'Denoise strength' })).toBeNull();

    await user.selectOptions(model, 'service-lite-4x');
    const slider = (await screen.findByRole('slider', { name: 'Denoise strength' })) as HTMLInputElement;
    expect(slider.value).toBe('1');
    fireEvent.change(slider, { target: { value: '0.35' } });
    await waitFor(() => expect(fake.settings.denoise).toBe(0.35));

    await user.selectOptions(model, 'digital-art-4x');
    await waitFor(() => expect(screen.queryByRole('slider', { name: 'Denoise strength' })).toBeNull());

    await user.selectOptions(model, 'service-lite-4x');
    expect(((await screen.findByRole('slider', { name: 'Denoise strength' })) as HTMLInputElement).value).toBe('0.35');
    await user.click(within(screen.getByRole('radiogroup', { name: 'Mode' })).getByRole('radio', { name: 'Cloud' }));
    await waitFor(() => expect(screen.queryByRole('slider', { name: 'Denoise strength' })).toBeNull());
  });
});
