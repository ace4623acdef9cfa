// @vitest-environment jsdom
/** The renderer end to end against an in-memory service: names, flows, keyboard, cloud credits. */
import { act, cleanup, screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { closeFakes } from './fakeService.js';
import { pngFile, renderApp } from './renderApp.js';

afterEach(async () => {
  cleanup();
  await closeFakes();
});

async function addThree(user: ReturnType<typeof userEvent.setup>) {
  await user.upload(screen.getByLabelText('Add images'), [pngFile('a.png'), pngFile('b.png'), pngFile('c.png')]);
  const queue = screen.getByRole('region', { name: 'Queue' });
  await waitFor(() =>
    expect(within(within(queue).getByRole('list', { name: 'Images' })).getAllByRole('listitem')).toHaveLength(3),
  );
  return queue;
}

describe('renderer', () => {
  it('exposes the controls under their documented accessible names', async () => {
    await renderApp();
    expect(await screen.findByRole('combobox', { name: 'Model' })).toBeTruthy();
    expect(screen.getByLabelText('Add images')).toBeTruthy();
    expect(screen.getByRole('combobox', { name: 'Scale' })).toBeTruthy();
    expect(screen.getByRole('combobox', { name: 'Format' })).toBeTruthy();
    expect(screen.getByRole('slider', { name: 'Compression' })).toBeTruthy();
    expect(screen.getByRole('checkbox', { name: 'Enhance faces' })).toBeTruthy();
    expect(screen.getByRole('button', { name: 'Upscale' })).toBeTruthy();
    expect(screen.getByRole('button', { name: 'Stop' })).toBeTruthy();
    expect(screen.getByRole('region', { name: 'Queue' })).toBeTruthy();
    const mode = screen.getByRole('radiogroup', { name: 'Mode' });
    expect(within(mode).getByRole('radio', { name: 'Local' })).toBeTruthy();
    expect(within(mode).getByRole('radio', { name: 'Cloud' })).toBeTruthy();
  });

  it('shows "not installed" honestly and describes the chosen model', async () => {
    await renderApp({ notInstalled: ['natural-max-4x'] });
    const model = await screen.findByRole('combobox', { name: 'Model' });
    await waitFor(() => expect(within(model).getAllByRole('option').length).toBeGreaterThan(5));
    // Local: the picker offers what can run here; the rest waits under "Download models" with size and licence.
    expect(within(model).queryByRole('option', { name: /Natural Max/ })).toBeNull();
    await userEvent.setup().click(screen.getByText('Download models (1 not installed)'));
    expect(within(screen.getByRole('list', { name: 'Models to download' })).getByRole('listitem').textContent).toBe(
      'Natural Max (16.2 MB · BSD-3-Clause)The natural-max-4x model.Download',
    );
    expect(screen.getByText('The digital-art-4x model.')).toBeTruthy();
  });

  it('sends each setting change to the service', async () => {
    const user = userEvent.setup();
    const { fake } = await renderApp();
    await user.selectOptions(await screen.findByRole('combobox', { name: 'Scale' }), '2');
    await user.selectOptions(screen.getByRole('combobox', { name: 'Format' }), 'webp');
    await user.click(screen.getByRole('checkbox', { name: 'Enhance faces' }));
    await waitFor(() => expect(fake.settings).toMatchObject({ scale: 2, format: 'webp', face: true }));
    expect((screen.getByRole('combobox', { name: 'Scale' }) as HTMLSelectElement).value).toBe('2');
  });

  it('adds files, upscales with per-item and batch progress, and compares a result', async () => {
    const user = userEvent.setup();
    const { fake } = await renderApp();
    const queue = await addThree(user);
    expect(fake.calls.filter((c) => c.method === 'addFile').map((c) => c.args[0])).toEqual(['a.png', 'b.png', 'c.png']);

    await user.click(screen.getByRole('button', { name: 'Upscale' }));
    await waitFor(() =>
      expect((screen.getByRole('button', { name: 'Stop' }) as HTMLButtonElement).disabled).toBe(false),
    );
    await act(() => fake.step(50));
    await waitFor(() =>
      expect(screen.getByRole('progressbar', { name: 'a.png progress' }).getAttribute('value')).toBe('50'),
    );
    expect(within(queue).getByText('Upscaling… 50%')).toBeTruthy();

    await act(() => fake.finishAll());
    await waitFor(() => expect(within(queue).getAllByText(/^Done/)).toHaveLength(3));
    expect(screen.getByRole('progressbar', { name: 'Batch progress' }).getAttribute('value')).toBe('100');
    expect(await screen.findByText('Finished: 3 of 3 images upscaled.')).toBeTruthy();
    expect(screen.getByTestId('batch-status').textContent).toBe('3 done');
    // The picture first: the latest result is in the main pane with its comparison, no click and no dialog.
    const pane = screen.getByRole('region', { name: 'Result: c.png' });
    expect(within(pane).getByRole('slider', { name: 'Compare' })).toBeTruthy();
    expect(screen.queryByRole('dialog')).toBeNull();
    // Its thumbnail chooses another result for the pane.
    await user.click(within(queue).getByRole('button', { name: 'View a.png' }));
    expect(screen.getByRole('region', { name: 'Result: a.png' })).toBeTruthy();

    await user.click(screen.getByRole('button', { name: 'Compare b.png' }));
    const dialog = await screen.findByRole('dialog', { name: 'Compare b.png' });
    const slider = within(dialog).getByRole('slider', { name: 'Compare' });
    await waitFor(() => expect(document.activeElement).toBe(slider));
    expect(slider.getAttribute('aria-valuenow')).toBe('50');
    await user.keyboard('{ArrowRight}{ArrowRight}');
    expect(slider.getAttribute('aria-valuenow')).toBe('54');
    await user.keyboard('{Home}');
    expect(slider.getAttribute('aria-valuenow')).toBe('0');
    await user.click(within(dialog).getByRole('button', { name: 'Zoom in' }));
    expect(within(dialog).getByText('125%')).toBeTruthy();
    await waitFor(() => expect(within(dialog).getByRole('img', { name: /After: b.png/ })).toBeTruthy());
    await user.keyboard('{Escape}');
    expect(screen.queryByRole('dialog')).toBeNull();
  });

  it('stops a running batch', async () => {
    const user = userEvent.setup();
    const { fake } = await renderApp();
    const queue = await addThree(user);
    await user.click(screen.getByRole('button', { name: 'Upscale' }));
    await act(() => fake.step(100));
    await user.click(await screen.findByRole('button', { name: 'Stop' }));
    await waitFor(() => expect(within(queue).getAllByText('Stopped')).toHaveLength(2));
    expect(fake.calls.some((c) => c.method === 'cancel' && c.args.length === 0)).toBe(true);
  });

  it('shows a failed item in plain words while the others finish', async () => {
    const user = userEvent.setup();
    const { fake } = await renderApp({ failNames: /^b\.png$/ });
    const queue = await addThree(user);
    await user.click(screen.getByRole('button', { name: 'Upscale' }));
    await act(() => fake.finishAll());
    await waitFor(() => expect(within(queue).getAllByText(/^Done/)).toHaveLength(2));
    expect(within(queue).getByText(/b\.png is not an image Crisp can read/)).toBeTruthy();
    await waitFor(() =>
      expect(screen.getByRole('alert').textContent).toMatch('Finished: 2 of 3 images upscaled, 1 failed.'),
    );
    expect(screen.getByRole('button', { name: 'Retry b.png' })).toBeTruthy();
  });

  it('is usable from the keyboard: Tab reaches the controls, Ctrl+Enter upscales', async () => {
    const user = userEvent.setup();
    const { fake } = await renderApp();
    await addThree(user);
    screen.getByRole('radio', { name: 'Local' }).focus();
    await user.keyboard('{ArrowRight}');
    await waitFor(() => expect(fake.settings.mode).toBe('cloud'));
    await user.keyboard('{ArrowLeft}');
    await waitFor(() => expect(fake.settings.mode).toBe('local'));
    await user.tab();
    expect(document.activeElement).toBe(screen.getByRole('button', { name: 'Keyboard shortcuts' }));
    await user.tab();
    expect(document.activeElement).toBe(screen.getByRole('combobox', { name: 'Theme' }));
    await user.keyboard('{Control>}{Enter}{/Control}');
    await waitFor(() => expect(fake.calls.some((c) => c.method === 'start')).toBe(true));
  });

  it('pastes an image from the clipboard, but not into a text field', async () => {
    const { fake } = await renderApp();
    await screen.findByRole('combobox', { name: 'Model' });
    const paste = (target: EventTarget) => {
      const event = new Event('paste', { bubbles: true }) as Event & { clipboardData: unknown };
      event.clipboardData = { files: [pngFile('image.png')] };
      target.dispatchEvent(event);
    };
    act(() => paste(document.body));
    await waitFor(() => expect(fake.items).toHaveLength(1));
    expect(fake.items[0]?.inputName).toMatch(/^Pasted image \d\d-\d\d-\d\d\.png$/);
    act(() => paste(screen.getByRole('textbox', { name: 'Output folder' })));
    await new Promise((r) => setTimeout(r, 20));
    expect(fake.items).toHaveLength(1);
  });

  it('uses native dialogs and real paths on the desktop', async () => {
    const user = userEvent.setup();
    // A real, writable folder: the service checks the output folder when it is chosen.
    const outDir = await mkdtemp(path.join(os.tmpdir(), 'crisp-out-'));
    const desktop = {
      pathForFile: (f: File) => `/photos/${f.name}`,
      pickImages: vi.fn(async () => ['/photos/x.png']),
      pickInputFolder: vi.fn(async () => '/photos'),
      pickOutputFolder: vi.fn(async () => outDir),
      startDrag: vi.fn(),
    };
    const { fake } = await renderApp({ desktop });
    await user.click(await screen.findByRole('button', { name: 'Choose images…' }));
    await user.click(screen.getByRole('button', { name: 'Choose a folder…' }));
    await user.upload(screen.getByLabelText('Add images'), [pngFile('y.png')]);
    await waitFor(() =>
      expect(fake.calls.filter((c) => c.method === 'addPaths').map((c) => c.args[0])).toEqual([
        ['/photos/x.png'],
        ['/photos'],
        ['/photos/y.png'],
      ]),
    );
    await user.click(screen.getByRole('button', { name: 'Choose…' }));
    await waitFor(() => expect(fake.settings.outputFolder).toBe(outDir));
    await rm(outDir, { recursive: true, force: true });
  });

  it('cloud mode: stores the key, shows balance and estimate, deducts per item', async () => {
    const user = userEvent.setup();
    const { fake } = await renderApp({ balance: 10 });
    await user.click(await screen.findByRole('radio', { name: 'Cloud' }));
    const key = await screen.findByRole('textbox', { name: 'API key' });
    await user.type(key, 'k-123');
    await user.click(screen.getByRole('button', { name: 'Test connection' }));
    await waitFor(() => expect(fake.apiKey).toBe('k-123'));
    await waitFor(() =>
      expect(screen.getByTestId('connection').textContent).toBe(
        'Connected as user@example.test: 10 credits available.',
      ),
    );
    expect((screen.getByRole('textbox', { name: 'API key' }) as HTMLInputElement).value).toBe('');
    const credits = screen.getByRole('region', { name: 'Credits' });
    await waitFor(() => expect(within(credits).getByTestId('balance').textContent).toBe('10 credits'));
    await addThree(user);
    await waitFor(() => expect(within(credits).getByTestId('estimate').textContent).toBe('6 credits for 3 images'));
    await user.click(screen.getByRole('button', { name: 'Upscale' }));
    await act(() => fake.finishAll());
    await waitFor(() => expect(within(credits).getByTestId('balance').textContent).toBe('4 credits'));
    expect(within(credits).getByTestId('deducted').textContent).toBe('6 credits');
    expect(screen.getAllByText('−2 credits')).toHaveLength(3);
  });

  it('cloud mode: a batch beyond the balance says "Insufficient credits", the bar does not say Ready, and nothing starts', async () => {
    const user = userEvent.setup();
    const { fake } = await renderApp({ balance: 4, apiKey: 'k' });
    await user.click(await screen.findByRole('radio', { name: 'Cloud' }));
    await addThree(user);
    const credits = screen.getByRole('region', { name: 'Credits' });
    await waitFor(() => expect(within(credits).getByRole('alert').textContent).toMatch('Insufficient credits'));
    // The bar says why nothing can start instead of "Ready", and Upscale is greyed (it would only be refused).
    await waitFor(() =>
      expect(screen.getByTestId('batch-status').textContent).toMatch(
        /not enough credits: these images need 6 credits and the balance is 4 credits/,
      ),
    );
    expect(screen.getByTestId('batch-status').textContent).not.toMatch(/Ready/);
    expect((screen.getByRole('button', { name: 'Upscale' }) as HTMLButtonElement).disabled).toBe(true);
    expect(fake.balance).toBe(4);
    expect(fake.items.every((i) => i.status === 'queued')).toBe(true);
  });

  it('cloud mode: one credit reads "1 credit", never "1 credits"', async () => {
    const user = userEvent.setup();
    await renderApp({ balance: 1, apiKey: 'k' });
    await user.click(await screen.findByRole('radio', { name: 'Cloud' }));
    await user.upload(screen.getByLabelText('Add images'), [pngFile('a.png')]);
    await waitFor(() =>
      expect(screen.getByTestId('batch-status').textContent).toMatch(
        /not enough credits: these images need 2 credits and the balance is 1 credit\b/,
      ),
    );
    expect(document.body.textContent).not.toMatch(/\b1 credits\b/);
  });

  it('switches themes through settings', async () => {
    const user = userEvent.setup();
    await renderApp();
    await user.selectOptions(await screen.findByRole('combobox', { name: 'Theme' }), 'dark');
    await waitFor(() => expect(document.documentElement.dataset.theme).toBe('dark'));
  });
});
