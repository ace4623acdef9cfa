// @vitest-environment jsdom
/**
 * Engine settings offer only the execution providers this computer's onnxruntime has (asked of the engine
 * process), keep a saved choice it lacks visible as such, and say which device ran the latest image.
 */
import { act, cleanup, screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { afterEach, describe, expect, it } from 'vitest';
import { closeFakes } from './fakeService.js';
import { pngFile, renderApp } from './renderApp.js';

afterEach(async () => {
  cleanup();
  await closeFakes();
});

const providerOptions = async () => {
  // The list is asked of the engine when the panel opens (not at startup).
  const details = (await screen.findByText('Engine settings')).closest('details')!;
  if (!details.open) {
    details.open = true;
    details.dispatchEvent(new Event('toggle'));
  }
  const select = (await screen.findByRole('combobox', { name: 'Execution provider' })) as HTMLSelectElement;
  await waitFor(() => expect(screen.getByTestId('device-in-use').textContent).not.toMatch(/^Checking/));
  return { select, options: Array.from(select.options).map((o) => [o.value, o.textContent]) };
};

describe('execution providers', () => {
  it('lists only what the runtime offers, in Automatic order, then says what ran the last image', async () => {
    const user = userEvent.setup();
    const { fake } = await renderApp({ devices: ['webgpu', 'cpu'] });
    const { options } = await providerOptions();
    expect(options).toEqual([
      ['auto', 'Automatic'],
      ['cpu', 'CPU'],
      ['webgpu', 'WebGPU'],
    ]);
    expect(screen.getByTestId('device-in-use').textContent).toBe(
      'Automatic uses the first that works of: WebGPU, CPU.',
    );

    await user.upload(screen.getByLabelText('Add images'), [pngFile('photo.png')]);
    const list = () => within(screen.getByRole('list', { name: 'Images' }));
    await waitFor(() => expect(list().getAllByRole('listitem')).toHaveLength(1));
    await user.click(screen.getByRole('button', { name: 'Upscale' }));
    await act(() => fake.finishAll());
    await waitFor(() =>
      expect(screen.getByTestId('device-in-use').textContent).toBe('Last image ran on WebGPU, Full (fp32).'),
    );
    // The row keeps it across a reload of the queue: it is part of the persisted item.
    expect((await fake.getQueue()).items[0]!.device).toEqual({ provider: 'webgpu', precision: 'fp32' });
  });

  it('a CPU-only computer offers CPU only; a saved CUDA choice stays, marked unavailable', async () => {
    await renderApp({ settings: { executionProvider: 'cuda' } });
    const { select, options } = await providerOptions();
    expect(options).toEqual([
      ['auto', 'Automatic'],
      ['cpu', 'CPU'],
      ['cuda', 'NVIDIA CUDA (not available on this computer)'],
    ]);
    expect(select.value).toBe('cuda');
    expect(screen.getByTestId('device-in-use').textContent).toBe('Automatic uses the first that works of: CPU.');
  });
});
