// @vitest-environment jsdom
/** The precision picker in Engine settings: what it stores and what it says about int8 (CPU) and fp16 (GPU). */
import { cleanup, screen, waitFor } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { afterEach, describe, expect, it } from 'vitest';
import { closeFakes } from './fakeService.js';
import { renderApp } from './renderApp.js';

afterEach(async () => {
  cleanup();
  await closeFakes();
});

describe('precision setting', () => {
  it('offers Automatic, fp32, int8 and fp16 and stores the choice', async () => {
    const user = userEvent.setup();
    const { fake } = await renderApp();
    const select = (await screen.findByRole('combobox', { name: 'Precision' })) as HTMLSelectElement;
    expect(Array.from(select.options).map((o) => [o.value, o.textContent])).toEqual([
      ['auto', 'Automatic'],
      ['fp32', 'Full (fp32)'],
      ['int8', 'Fast (int8)'],
      ['fp16', 'Half (fp16, graphics card)'],
    ]);
    expect(select.value).toBe('auto');
    expect(document.getElementById(select.getAttribute('aria-describedby')!)!.textContent).toMatch(
      /^Automatic uses int8 \(faster\) only where this CPU has int8 instructions/,
    );
    await user.selectOptions(select, 'int8');
    await waitFor(() => expect(fake.settings.precision).toBe('int8'));
  });
});
