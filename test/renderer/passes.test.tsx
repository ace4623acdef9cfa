// @vitest-environment jsdom
/** The Passes control beside Scale: what it stores, the total it shows, and the Cloud warning. */
import { cleanup, screen, waitFor } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { afterEach, describe, expect, it } from 'vitest';
import { closeFakes } from './fakeService.js';
import { renderApp } from './renderApp.js';

afterEach(async () => {
  cleanup();
  await closeFakes();
});

describe('double upscale control', () => {
  it('stores passes and shows ×scale → ×total, following the scale', async () => {
    const user = userEvent.setup();
    const { fake } = await renderApp({ settings: { scale: 4 } });
    const passes = await screen.findByRole('combobox', { name: 'Passes' });
    expect(screen.getByTestId('passes-total').textContent).toBe('×4');
    await user.selectOptions(passes, '2');
    await waitFor(() => expect(fake.settings.passes).toBe(2));
    expect(screen.getByTestId('passes-total').textContent).toBe('×4 → ×16');
    await user.selectOptions(screen.getByRole('combobox', { name: 'Scale' }), '2');
    await waitFor(() => expect(screen.getByTestId('passes-total').textContent).toBe('×2 → ×4'));
    expect(screen.queryByText(/runs only in Local mode/)).toBeNull();
  });

  it('warns in Cloud mode that a service refuses it', async () => {
    const user = userEvent.setup();
    await renderApp({ settings: { passes: 2 } });
    await user.click(await screen.findByRole('radio', { name: 'Cloud' }));
    expect(await screen.findByText(/^Double upscale runs only in Local mode/)).toBeTruthy();
  });
});
