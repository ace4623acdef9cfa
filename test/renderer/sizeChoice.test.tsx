// @vitest-environment jsdom
/**
 * The Size box (issue 41 item 1): a scale factor, or an exact width, height, long side or box; the choice is
 * stored in the settings, and a waiting row shows the exact size it will get before the run.
 */
import { cleanup, screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { closeFakes } from './fakeService.js';
import { pngFile, renderApp } from './renderApp.js';

afterEach(async () => {
  vi.restoreAllMocks();
  cleanup();
  await closeFakes();
});

const images = () => within(screen.getByRole('list', { name: 'Images' }));

describe('Size', () => {
  it('chooses width, box, long side or scale, and each waiting row shows its size before the run', async () => {
    const user = userEvent.setup();
    const { fake } = await renderApp({ settings: { scale: 2 } });
    // PNG_1x1 is 1×1.
    await user.upload(screen.getByLabelText('Add images'), [pngFile('a.png')]);
    await waitFor(() => expect(images().getByText('1×1 → 2×2')).toBeTruthy());

    const size = screen.getByRole('combobox', { name: 'Size' });
    await user.selectOptions(size, 'width');
    const width = await screen.findByRole('spinbutton', { name: 'Width (px)' });
    await user.clear(width);
    await user.type(width, '300{Enter}');
    await waitFor(() => expect(images().getByText('1×1 → 300×300')).toBeTruthy());
    await waitFor(async () =>
      expect(await fake.getSettings()).toMatchObject({ width: 300, height: null, longSide: null, passes: 1 }),
    );
    // An exact size chooses the model pass: no Passes box, and a hint says how the size is reached.
    expect(screen.queryByRole('combobox', { name: 'Passes' })).toBeNull();
    expect(screen.getByTestId('size-hint').textContent).toMatch(/exactly this size/);

    await user.selectOptions(size, 'box');
    const height = await screen.findByRole('spinbutton', { name: 'Height (px)' });
    await user.clear(height);
    await user.type(height, '120{Enter}');
    await waitFor(() => expect(images().getByText('1×1 → 120×120')).toBeTruthy());
    await waitFor(async () =>
      expect(await fake.getSettings()).toMatchObject({ width: 300, height: 120, longSide: null }),
    );

    await user.selectOptions(size, 'longSide');
    await waitFor(() => expect(images().getByText('1×1 → 300×300')).toBeTruthy());
    await waitFor(async () =>
      expect(await fake.getSettings()).toMatchObject({ width: null, height: null, longSide: 300 }),
    );

    // A nonsense value is not stored: the field goes back to the stored size.
    const long = screen.getByRole('spinbutton', { name: 'Long side (px)' });
    await user.clear(long);
    await user.type(long, '0{Enter}');
    expect((await fake.getSettings()).longSide).toBe(300);

    await user.selectOptions(size, 'scale');
    await waitFor(() => expect(images().getByText('1×1 → 2×2')).toBeTruthy());
    expect(screen.getByRole('combobox', { name: 'Scale' })).toBeTruthy();
    await waitFor(async () =>
      expect(await fake.getSettings()).toMatchObject({ width: null, height: null, longSide: null }),
    );
  });
});
