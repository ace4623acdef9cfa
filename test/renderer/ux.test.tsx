// @vitest-environment jsdom
/**
 * Issue 18 in the renderer, against the generated fake (real app layer, scripted backend): one status
 * model, Resume and Retry all, result actions, the Cloud connect card and its scoped errors, drop
 * anywhere with one line per refused file, keyboard shortcuts and the first-run steps.
 */
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { act, cleanup, fireEvent, render, screen, waitFor, within } from '@testing-library/react';
import { App } from '../../renderer/src/App.js';
import { AppProvider } from '../../renderer/src/stores/appContext.js';
import userEvent from '@testing-library/user-event';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { batchSummary, countStates, etaMs, formatDuration, statusLine } from '../../renderer/src/stores/statusModel.js';
import { closeFakes } from './fakeService.js';
import { pngFile, renderApp } from './renderApp.js';

afterEach(async () => {
  vi.restoreAllMocks();
  cleanup();
  await closeFakes();
});

const images = () => within(screen.getByRole('list', { name: 'Images' }));
const bar = () => screen.getByTestId('batch-status').textContent;

async function addImages(user: ReturnType<typeof userEvent.setup>, names: string[]) {
  await user.upload(screen.getByLabelText('Add images'), names.map(pngFile));
  await waitFor(() => expect(images().getAllByRole('listitem')).toHaveLength(names.length));
}

describe('status model', () => {
  it('counts each state and words the bar and the banner from the same counts', () => {
    const items = (['done', 'failed', 'failed', 'cancelled', 'queued', 'running'] as const).map((status) => ({
      status,
    }));
    const c = countStates(items);
    expect(c).toEqual({ waiting: 1, running: 1, done: 1, failed: 2, stopped: 1, skipped: 0, total: 6 });
    expect(statusLine(c, true)).toBe('Upscaling: 1 upscaling · 1 waiting · 1 done · 2 failed · 1 stopped');
    expect(statusLine(countStates([]), false)).toBe('Nothing to do yet: add images to start.');
    expect(statusLine(countStates([{ status: 'queued' }, { status: 'queued' }]), false)).toBe('Ready: 2 waiting');
    expect(batchSummary({ done: 1, failed: 2, total: 3 })).toEqual({
      kind: 'error',
      text: 'Finished: 1 of 3 images upscaled, 2 failed.',
    });
    expect(batchSummary({ done: 7, failed: 0, total: 20 })).toEqual({
      kind: 'info',
      text: 'Stopped: 7 of 20 images upscaled, 13 stopped.',
    });
    expect(etaMs(30_000, 25)).toBe(90_000);
    expect(etaMs(500, 25)).toBeNull();
    expect([formatDuration(3_240), formatDuration(75_000), formatDuration(3_720_000)]).toEqual([
      '3.2 s',
      '1 min 15 s',
      '1 h 02 min',
    ]);
  });

  it('bar, banner and queue agree: waiting before, stopped after Stop, Resume runs the stopped ones, Clear empties the bar', async () => {
    const user = userEvent.setup();
    const { fake } = await renderApp();
    await screen.findByRole('button', { name: 'Try a sample image' });
    await addImages(user, ['a.png', 'b.png', 'c.png', 'd.png']);
    await waitFor(() => expect(bar()).toBe('Ready: 4 waiting'));
    await user.click(screen.getByRole('button', { name: 'Upscale' }));
    await act(() => fake.step(100));
    await waitFor(() => expect(bar()).toMatch(/^Upscaling: 1 upscaling · 2 waiting · 1 done$/));
    expect(screen.getByTestId('batch-clock').textContent).toMatch(/elapsed/);
    await user.click(screen.getByRole('button', { name: 'Stop' }));
    await waitFor(() => expect(bar()).toBe('1 done · 3 stopped'));
    expect(screen.getByTestId('queue-counts').textContent).toBe('1 done · 3 stopped');
    expect(await screen.findByText('Stopped: 1 of 4 images upscaled, 3 stopped.')).toBeTruthy();
    expect(images().getByText(/^Done in \d/)).toBeTruthy();

    await user.click(screen.getByRole('button', { name: 'Resume (3)' }));
    await waitFor(() => expect(bar()).toMatch(/^Upscaling: /));
    await act(() => fake.finishAll());
    await waitFor(() => expect(bar()).toBe('4 done'));
    expect(screen.queryByRole('button', { name: /^Resume/ })).toBeNull();
    // Uploads whose results were never downloaded: clearing them is confirmed first.
    await user.click(screen.getByRole('button', { name: 'Clear finished' }));
    await user.click(await screen.findByRole('button', { name: 'Delete them too (4)' }));
    await waitFor(() => expect(bar()).toBe('Nothing to do yet: add images to start.'));
    expect(screen.getByRole('progressbar', { name: 'Batch progress' })).toBeTruthy();
  });

  it('Retry all runs failed and stopped images again', async () => {
    const user = userEvent.setup();
    const { fake } = await renderApp({ failNames: /^bad/ });
    await addImages(user, ['bad.png', 'ok.png', 'later.png']);
    await user.click(screen.getByRole('button', { name: 'Upscale' }));
    await act(() => fake.step(100));
    await act(() => fake.step(100));
    await user.click(screen.getByRole('button', { name: 'Stop' }));
    await waitFor(() => expect(bar()).toBe('1 done · 1 failed · 1 stopped'));
    await user.click(screen.getByRole('button', { name: 'Retry all (2)' }));
    await waitFor(() => expect(bar()).toMatch(/^Upscaling: .*1 done$/));
    await act(() => fake.finishAll());
    await waitFor(() => expect(bar()).toBe('2 done · 1 failed'));
  });
});

describe('results', () => {
  it("browser UI: Download and Download all ask the bridge for signed links; an upload's internal folder is not shown", async () => {
    const user = userEvent.setup();
    const downloadLink = vi.fn(async (ids: string[]) => `/download?ids=${ids.join(',')}`);
    const clicks: string[] = [];
    vi.spyOn(HTMLAnchorElement.prototype, 'click').mockImplementation(function click(this: HTMLAnchorElement) {
      clicks.push(this.getAttribute('href') ?? '');
    });
    const { fake } = await renderApp({ browser: { downloadLink } });
    await addImages(user, ['a.png', 'b.png']);
    await user.click(screen.getByRole('button', { name: 'Upscale' }));
    await act(() => fake.finishAll());
    const [a, b] = fake.items;
    await user.click(await screen.findByRole('button', { name: 'Download a.png' }));
    await user.click(screen.getByRole('button', { name: 'Download all (2)' }));
    await waitFor(() => expect(clicks).toEqual([`/download?ids=${a!.id}`, `/download?ids=${a!.id},${b!.id}`]));
    // Uploads and their results live in Crisp's data folder (drops/<uuid>/): the row says so, not the path.
    expect(images().getAllByText('Kept in Crisp until you download it')).toHaveLength(2);
    expect(images().queryByText(/^Saved in /)).toBeNull();
    // No desktop-only actions in the browser.
    expect(screen.queryByRole('button', { name: 'Show a.png in folder' })).toBeNull();
    // The comparison offers the same actions.
    await user.click(screen.getByRole('button', { name: 'Compare a.png' }));
    const dialog = await screen.findByRole('dialog', { name: 'Compare a.png' });
    expect(within(dialog).getByRole('button', { name: 'Download a.png' })).toBeTruthy();
    expect(within(dialog).getByRole('button', { name: 'Copy a.png' })).toBeTruthy();
  });

  it('Clear finished asks before deleting results never downloaded, and never removes failed rows', async () => {
    const user = userEvent.setup();
    const downloadLink = vi.fn(async (ids: string[]) => `/download?ids=${ids.join(',')}`);
    vi.spyOn(HTMLAnchorElement.prototype, 'click').mockImplementation(() => undefined);
    const { fake } = await renderApp({ browser: { downloadLink }, failNames: /^bad/ });
    await addImages(user, ['a.png', 'b.png', 'bad.png']);
    await user.click(screen.getByRole('button', { name: 'Upscale' }));
    await act(() => fake.finishAll());
    await waitFor(() => expect(bar()).toBe('2 done · 1 failed'));
    const [a, b] = fake.items;
    const dropsOf = (id: string) => path.dirname(fake.items.find((i) => i.id === id)!.outputPath!);
    const aFolder = dropsOf(a!.id);
    const bFolder = dropsOf(b!.id);
    expect(existsSync(path.join(aFolder, path.basename(a!.outputPath!)))).toBe(true);

    // b is "downloaded" (the bridge reports a finished download): only a is unsaved.
    await act(() => fake.markDownloaded([b!.id]));
    await user.click(screen.getByRole('button', { name: 'Clear finished' }));
    const question = await screen.findByRole('alertdialog');
    expect(within(question).getByText(/^1 result was never downloaded/)).toBeTruthy();
    // Escape closes the question and deletes nothing.
    await user.keyboard('{Escape}');
    await waitFor(() => expect(screen.queryByRole('alertdialog')).toBeNull());
    expect(fake.calls.some((c) => c.method === 'clearFinished')).toBe(false);

    // "Clear the others, keep it": b goes (its files with it), a and the failed row stay.
    await user.click(screen.getByRole('button', { name: 'Clear finished' }));
    await user.click(await screen.findByRole('button', { name: 'Clear the others, keep it' }));
    await waitFor(() =>
      expect(fake.items.map((i) => [i.inputName, i.status])).toEqual([
        ['a.png', 'done'],
        ['bad.png', 'failed'],
      ]),
    );
    expect(existsSync(bFolder)).toBe(false);
    expect(existsSync(a!.outputPath!)).toBe(true);
    expect(await screen.findByText('1 result was kept: it was never downloaded.')).toBeTruthy();

    // "Download it first" asks the bridge for a's link and clears nothing.
    await user.click(screen.getByRole('button', { name: 'Clear finished' }));
    await user.click(await screen.findByRole('button', { name: 'Download it first' }));
    await waitFor(() => expect(downloadLink).toHaveBeenLastCalledWith([a!.id]));
    expect(fake.items).toHaveLength(2);

    // Confirmed: "Delete it too" removes a and its files; the failed row still stays.
    await user.click(screen.getByRole('button', { name: 'Clear finished' }));
    await user.click(await screen.findByRole('button', { name: 'Delete it too' }));
    await waitFor(() => expect(fake.items.map((i) => i.inputName)).toEqual(['bad.png']));
    expect(existsSync(aFolder)).toBe(false);
    expect((screen.getByRole('button', { name: 'Clear finished' }) as HTMLButtonElement).disabled).toBe(true);
  });

  it('each row says what made it and how long it took, also after a reload', async () => {
    const user = userEvent.setup();
    const { fake, unmount } = await renderApp();
    await addImages(user, ['a.png']);
    await user.click(screen.getByRole('button', { name: 'Upscale' }));
    await act(() => fake.finishAll());
    await user.selectOptions(screen.getByRole('combobox', { name: 'Scale' }), '2');
    await user.selectOptions(screen.getByRole('combobox', { name: 'Format' }), 'webp');
    await waitFor(() => expect(fake.settings.format).toBe('webp'));
    // The row says what made it, not what is chosen now.
    expect(images().getByTestId('item-made').textContent).toBe('Digital Art · ×4 · PNG');
    const done = fake.items[0]!;
    expect(done.durationMs).toEqual(expect.any(Number));

    // A reload: a new page on the same service. The page saw no timing, the row still says its duration.
    unmount();
    render(
      <AppProvider service={fake} desktop={null} browser={null}>
        <App />
      </AppProvider>,
    );
    await waitFor(() => expect(images().getByTestId('item-made').textContent).toBe('Digital Art · ×4 · PNG'));
    expect(images().getByTestId('item-status').textContent).toMatch(/^Done in \d/);
  });

  it('shows the target size before the run, hints at ×5–×8, and says where the browser UI keeps the key', async () => {
    const user = userEvent.setup();
    await renderApp({ browser: { downloadLink: async () => '' }, apiKey: 'k', settings: { scale: 2 } });
    // PNG_1x1 is 1×1: ×2 makes 2×2, shown while it waits.
    await addImages(user, ['a.png']);
    await waitFor(() => expect(images().getByText('1×1 → 2×2')).toBeTruthy());
    await user.selectOptions(screen.getByRole('combobox', { name: 'Scale' }), '6');
    await waitFor(() => expect(images().getByText('1×1 → 6×6')).toBeTruthy());
    expect(screen.getByTestId('scale-hint').textContent).toBe(
      '×6: the models are ×4; Crisp runs the ×4 model, then resizes the result to ×6.',
    );
    await user.selectOptions(screen.getByRole('combobox', { name: 'Scale' }), '4');
    await waitFor(() => expect(screen.queryByTestId('scale-hint')).toBeNull());
    await user.click(screen.getByRole('radio', { name: 'Cloud' }));
    expect(
      await screen.findByText(
        'An API key is stored in Crisp’s data folder on this computer (secrets.json, readable only by your user; never shown again).',
      ),
    ).toBeTruthy();
    expect(screen.queryByText(/system keychain/)).toBeNull();
  });

  it('desktop: Open and Show in folder go to the service; a finished row drags out its file', async () => {
    const user = userEvent.setup();
    const desktop = {
      pathForFile: () => '',
      pickImages: vi.fn(async () => []),
      pickInputFolder: vi.fn(async () => null),
      pickOutputFolder: vi.fn(async () => null),
      startDrag: vi.fn(),
    };
    const { fake } = await renderApp({ desktop });
    await addImages(user, ['a.png']);
    await user.click(screen.getByRole('button', { name: 'Upscale' }));
    await act(() => fake.finishAll());
    await user.click(await screen.findByRole('button', { name: 'Open a.png' }));
    await user.click(screen.getByRole('button', { name: 'Show a.png in folder' }));
    await waitFor(() =>
      expect(
        fake.calls.filter((c) => c.method === 'openOutput' || c.method === 'revealOutput').map((c) => c.method),
      ).toEqual(['openOutput', 'revealOutput']),
    );
    const row = images().getByRole('listitem', { name: 'a.png' });
    expect(row.getAttribute('draggable')).toBe('true');
    fireEvent.dragStart(row);
    expect(desktop.startDrag).toHaveBeenCalledWith(fake.items[0]!.id);
    expect(screen.queryByRole('button', { name: 'Download a.png' })).toBeNull();
  });
});

describe('cloud onboarding', () => {
  it('Cloud with nothing set shows the connect card, not an error; Test connection shows the balance; Local clears it all', async () => {
    const user = userEvent.setup();
    const { fake } = await renderApp({ balance: 12, settings: { baseUrl: '' } });
    await user.click(await screen.findByRole('radio', { name: 'Cloud' }));
    const card = await screen.findByRole('region', { name: 'Connect to an upscaling service' });
    expect(screen.queryByRole('alert')).toBeNull();
    expect(screen.queryByRole('region', { name: 'Credits' })).toBeNull();

    // Key without URL: the problem is said in the card, not in the window's banner.
    await user.type(within(card).getByRole('textbox', { name: 'API key' }), 'k-1');
    await user.click(within(card).getByRole('button', { name: 'Test connection' }));
    await waitFor(() =>
      expect(within(card).getByRole('alert').textContent).toBe(
        'Enter the service URL first (for example https://upscale.example.com).',
      ),
    );
    expect(screen.getAllByRole('alert')).toHaveLength(1);

    await user.type(within(card).getByRole('textbox', { name: 'Service URL' }), 'http://127.0.0.1:9');
    await user.click(within(card).getByRole('button', { name: 'Test connection' }));
    const credits = await screen.findByRole('region', { name: 'Credits' });
    await waitFor(() => expect(within(credits).getByTestId('balance').textContent).toBe('12 credits'));
    expect(screen.getByTestId('connection').textContent).toBe('Connected as user@example.test: 12 credits available.');
    expect(screen.queryByRole('region', { name: 'Connect to an upscaling service' })).toBeNull();
    expect(fake.apiKey).toBe('k-1');
    expect(fake.settings.baseUrl).toBe('http://127.0.0.1:9');
    expect(screen.queryByRole('alert')).toBeNull();

    // The estimate includes the face surcharge.
    await user.click(screen.getByRole('checkbox', { name: 'Enhance faces' }));
    await addImages(user, ['a.png', 'b.png']);
    await waitFor(() =>
      expect(within(credits).getByTestId('estimate').textContent).toBe(
        '6 credits for 2 images (incl. face enhancement)',
      ),
    );

    await user.click(screen.getByRole('radio', { name: 'Local' }));
    await waitFor(() => expect(screen.queryByRole('region', { name: 'Credits' })).toBeNull());
    expect(screen.queryByRole('alert')).toBeNull();
  });
});

describe('adding files', () => {
  it('a drop anywhere shows the overlay; each refused file gets its own line; broken images are flagged at once', async () => {
    await renderApp();
    await screen.findByRole('button', { name: 'Try a sample image' });
    const dataTransfer = (files: File[]) => ({ types: ['Files'], files, items: [], dropEffect: 'none' });
    const truncated = new File([new Uint8Array([137, 80, 78, 71, 13, 10, 26, 10, 0, 0, 0, 13])], 'cut.png', {
      type: 'image/png',
    });
    const files = [
      pngFile('ok.png'),
      new File(['hello'], 'notes.txt', { type: 'text/plain' }),
      new File(['%PDF'], 'doc.pdf', { type: 'application/pdf' }),
      truncated,
    ];
    fireEvent.dragEnter(window, { dataTransfer: dataTransfer(files) });
    expect(screen.getByText('Drop to add images')).toBeTruthy();
    fireEvent.drop(document.querySelector('.topbar')!, { dataTransfer: dataTransfer(files) });
    await waitFor(() => expect(screen.queryByText('Drop to add images')).toBeNull());
    const alert = await screen.findByRole('alert');
    await waitFor(() =>
      expect(
        within(alert)
          .getAllByRole('listitem')
          .map((li) => li.textContent),
      ).toEqual([
        'notes.txt is not a JPG, PNG or WebP image.',
        'doc.pdf is not a JPG, PNG or WebP image.',
        'cut.png is damaged (the PNG data is cut short): re-export or download it again, then add it anew.',
      ]),
    );
    expect(within(alert).getByText('3 files were not added:')).toBeTruthy();
    await waitFor(() => expect(images().getAllByRole('listitem')).toHaveLength(2));
    expect(images().getByRole('listitem', { name: 'cut.png' }).className).toContain('status-failed');
    expect(bar()).toBe('Ready: 1 waiting · 1 failed');
  });

  it('first run: the three steps; Try a sample adds the sample and upscales it at once with an installed model', async () => {
    const user = userEvent.setup();
    const sample = new Uint8Array(await readFile('renderer/src/assets/sample.png'));
    vi.stubGlobal(
      'fetch',
      vi.fn(async () => new Response(sample)),
    );
    try {
      const { fake } = await renderApp({ notInstalled: ['natural-max-4x'] });
      expect(await screen.findByText('Upscale in three steps')).toBeTruthy();
      // Downloads are an extra, with sizes; the installed models are named as working offline.
      expect(screen.getByTestId('empty-downloads').textContent).toContain('Natural Max (16.2 MB)');
      expect(screen.getByTestId('empty-offline').textContent).toMatch(/^Works offline: .*Digital Art/);
      await user.click(screen.getByRole('button', { name: 'Show downloads' }));
      expect((document.getElementById('model-downloads') as HTMLDetailsElement).open).toBe(true);

      await user.click(screen.getByRole('button', { name: 'Try a sample image' }));
      await waitFor(() =>
        expect(fake.items.map((i) => [i.inputName, i.status, i.inputDimensions])).toEqual([
          ['crisp-sample.png', 'running', { width: 128, height: 96 }],
        ]),
      );
      expect(fake.calls.filter((c) => c.method === 'start')).toHaveLength(1);
      await act(() => fake.finishAll());
      await waitFor(() => expect(bar()).toBe('1 done'));
    } finally {
      vi.unstubAllGlobals();
    }
  });

  it('the bar never says Ready when nothing can start: it says why, and the sample then waits', async () => {
    const user = userEvent.setup();
    const sample = new Uint8Array(await readFile('renderer/src/assets/sample.png'));
    vi.stubGlobal(
      'fetch',
      vi.fn(async () => new Response(sample)),
    );
    try {
      const { fake } = await renderApp({ notInstalled: ['natural-max-4x'], settings: { model: 'natural-max-4x' } });
      await user.click(await screen.findByRole('button', { name: 'Try a sample image' }));
      await waitFor(() => expect(fake.items.map((i) => i.status)).toEqual(['queued']));
      await waitFor(() =>
        expect(bar()).toBe(
          'Cannot start: Natural Max is not installed. Download it under Download models or choose an installed model (1 waiting)',
        ),
      );
      expect(fake.calls.some((c) => c.method === 'start')).toBe(false);
      expect((screen.getByRole('button', { name: 'Upscale' }) as HTMLButtonElement).disabled).toBe(true);
      // Choosing an installed model makes it startable, and the bar says Ready again.
      await user.selectOptions(screen.getByRole('combobox', { name: 'Model' }), 'digital-art-4x');
      await waitFor(() => expect(bar()).toBe('Ready: 1 waiting'));
      expect((screen.getByRole('button', { name: 'Upscale' }) as HTMLButtonElement).disabled).toBe(false);
    } finally {
      vi.unstubAllGlobals();
    }
  });
});

describe('keyboard', () => {
  it('arrows move in the queue, Delete removes the focused image, Esc stops, ? lists the shortcuts', async () => {
    const user = userEvent.setup();
    const { fake } = await renderApp();
    await addImages(user, ['a.png', 'b.png', 'c.png']);
    images().getByRole('listitem', { name: 'a.png' }).focus();
    await user.keyboard('{ArrowDown}');
    expect(document.activeElement).toBe(images().getByRole('listitem', { name: 'b.png' }));
    await user.keyboard('{Delete}');
    await waitFor(() => expect(fake.items.map((i) => i.inputName)).toEqual(['a.png', 'c.png']));
    await waitFor(() => expect(document.activeElement?.getAttribute('aria-label')).toBe('c.png'));

    await user.keyboard('{Control>}{Enter}{/Control}');
    await waitFor(() => expect(fake.calls.some((c) => c.method === 'start')).toBe(true));
    await act(() => fake.step(10));
    await user.keyboard('{Escape}');
    await waitFor(() => expect(bar()).toBe('2 stopped'));

    await user.keyboard('?');
    const help = await screen.findByRole('dialog', { name: 'Keyboard shortcuts' });
    expect(
      within(help)
        .getAllByRole('row')
        .map((r) => r.querySelector('kbd')?.textContent),
    ).toContain('Ctrl/⌘ + O');
    await user.keyboard('{Escape}');
    expect(screen.queryByRole('dialog')).toBeNull();
  });
});

describe('double upscale', () => {
  it('Again queues the result as a new input; upscaling it runs the model on the result', async () => {
    const user = userEvent.setup();
    const { fake } = await renderApp();
    await addImages(user, ['a.png']);
    await user.click(screen.getByRole('button', { name: 'Upscale' }));
    await act(() => fake.finishAll());
    const first = fake.items[0]!;
    await user.click(await screen.findByRole('button', { name: 'Upscale a.png again' }));
    await waitFor(() => expect(fake.items).toHaveLength(2));
    const second = fake.items[1]!;
    expect([second.inputPath, second.status]).toEqual([first.outputPath, 'queued']);
    expect(
      await screen.findByText(new RegExp(`^${second.inputName.replace(/[.]/g, '\\.')} is queued: press Upscale`)),
    ).toBeTruthy();
    await user.click(screen.getByRole('button', { name: 'Upscale' }));
    await act(() => fake.finishAll());
    await waitFor(() => expect(fake.items[1]?.status).toBe('done'));
    expect(fake.items[1]!.outputPath).not.toBe(first.outputPath);
  });
});

describe('model previews', () => {
  it('shows what the chosen model makes of the sample crop, on request', async () => {
    const user = userEvent.setup();
    const { fake } = await renderApp({ notInstalled: ['natural-max-4x'] });
    await user.click(await screen.findByRole('button', { name: 'Preview Digital Art' }));
    expect(await screen.findByRole('img', { name: 'The sample crop upscaled by Digital Art' })).toBeTruthy();
    expect(screen.getByRole('img', { name: 'The sample crop, enlarged without a model' })).toBeTruthy();
    expect(fake.calls.filter((c) => c.method === 'modelPreview').map((c) => c.args)).toEqual([['digital-art-4x']]);
    // Cloud: no previews (they are made on this computer).
    await user.click(screen.getByRole('radio', { name: 'Cloud' }));
    await waitFor(() => expect(screen.queryByRole('img', { name: /upscaled by/ })).toBeNull());
  });
});

describe('custom models', () => {
  it('imports a model file, offers it under Model, and removes it', async () => {
    const user = userEvent.setup();
    const { fake } = await renderApp();
    await user.click(await screen.findByText('Custom models (0)'));
    await user.upload(screen.getByLabelText('Import a model file'), new File([new Uint8Array(64)], 'anime.pth'));
    const list = await screen.findByRole('list', { name: 'Imported models' });
    expect(within(list).getByRole('listitem').textContent).toContain('anime');
    await waitFor(() =>
      expect(
        within(screen.getByRole('combobox', { name: 'Model' })).getByRole('option', { name: 'anime' }),
      ).toBeTruthy(),
    );
    expect(screen.getByText('anime is imported: choose “anime” under Model.')).toBeTruthy();
    expect(fake.calls.find((c) => c.method === 'importModel')?.args).toEqual(['anime.pth', 64]);
    await user.click(within(list).getByRole('button', { name: 'Remove anime' }));
    await waitFor(() => expect(screen.getByText('Custom models (0)')).toBeTruthy());
    expect(within(screen.getByRole('combobox', { name: 'Model' })).queryByRole('option', { name: 'anime' })).toBeNull();
  });
});

describe('notifications', () => {
  it('browser UI: asks once on Upscale, and announces a batch that ends in a background tab', async () => {
    const user = userEvent.setup();
    const shown: { title: string; body: string | undefined }[] = [];
    const requestPermission = vi.fn(async () => 'granted' as const);
    class FakeNotification {
      static permission: NotificationPermission = 'default';
      static requestPermission = requestPermission;
      constructor(title: string, options?: { body?: string }) {
        shown.push({ title, body: options?.body });
      }
    }
    vi.stubGlobal('Notification', FakeNotification);
    try {
      const { fake } = await renderApp({ browser: { downloadLink: async () => '' } });
      await addImages(user, ['a.png']);
      await user.click(screen.getByRole('button', { name: 'Upscale' }));
      expect(requestPermission).toHaveBeenCalledTimes(1);
      FakeNotification.permission = 'granted';
      vi.spyOn(document, 'hidden', 'get').mockReturnValue(true);
      await act(() => fake.finishAll());
      await waitFor(() => expect(shown).toEqual([{ title: 'Crisp', body: 'Finished: 1 of 1 image upscaled.' }]));
    } finally {
      vi.unstubAllGlobals();
    }
  });
});

describe('sound', () => {
  const started: number[] = [];
  class FakeAudioContext {
    currentTime = 0;
    destination = {};
    createOscillator() {
      return {
        frequency: { value: 0 },
        connect: (g: unknown) => g,
        start: () => started.push(1),
        stop: () => undefined,
      };
    }
    createGain() {
      return {
        gain: { setValueAtTime: () => undefined, exponentialRampToValueAtTime: () => undefined },
        connect: (d: unknown) => d,
      };
    }
    close() {
      return Promise.resolve();
    }
  }

  /** One batch of one image in a fresh app; resolves when its end is announced. */
  async function oneBatch(user: ReturnType<typeof userEvent.setup>, before?: () => Promise<void>): Promise<void> {
    const { fake } = await renderApp();
    await before?.();
    await addImages(user, ['a.png']);
    await user.click(screen.getByRole('button', { name: 'Upscale' }));
    await act(() => fake.finishAll());
    await screen.findByText('Finished: 1 of 1 image upscaled.');
  }

  beforeEach(() => {
    started.length = 0;
    localStorage.removeItem('crisp-sound');
    vi.stubGlobal('AudioContext', FakeAudioContext);
  });
  afterEach(() => vi.unstubAllGlobals());

  it('is silent by default', async () => {
    await oneBatch(userEvent.setup());
    expect(started).toEqual([]);
  });

  it('plays two tones once at the end of a batch when switched on, and remembers the choice', async () => {
    const user = userEvent.setup();
    await oneBatch(user, async () => {
      await user.click(screen.getByRole('checkbox', { name: 'Play a sound when a batch finishes' }));
      expect(localStorage.getItem('crisp-sound')).toBe('on');
    });
    await waitFor(() => expect(started).toEqual([1, 1]));
  });
});
