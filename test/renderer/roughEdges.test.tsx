// @vitest-environment jsdom
/**
 * Issue 41 item 10's smaller edges, against the real app layer: the Download models count says which are face
 * models, the keyboard gets a skip link and keeps its focus when the sample button goes, tile sizes read as
 * measures, the precision hint speaks to a person, and a dropped file's internal path is never shown.
 */
import path from 'node:path';
import { act, cleanup, screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { closeFakes, PNG_1x1 } from './fakeService.js';
import { pngFile, renderApp } from './renderApp.js';

afterEach(async () => {
  cleanup();
  vi.unstubAllGlobals();
  await closeFakes();
});

describe('rough edges', () => {
  it('"Download models" names the face models apart from the upscaling ones (the guide counts only those)', async () => {
    await renderApp({ notInstalled: ['natural-max-4x'], noFaceModel: true });
    const summary = await screen.findByText(/^Download models \(/);
    expect(summary.textContent).toMatch(/^Download models \((\d+) not installed: 1 for upscaling, (\d+) for faces\)$/);
    const [, n, faces] = /\((\d+) not installed: 1 for upscaling, (\d+) for faces/.exec(summary.textContent!)!;
    expect(Number(n)).toBe(1 + Number(faces));
    expect(Number(faces)).toBeGreaterThan(0);
  });

  it('the first Tab stop is a skip link to the main pane', async () => {
    const user = userEvent.setup();
    await renderApp();
    await screen.findByRole('button', { name: 'Try a sample image' });
    await user.tab();
    const skip = screen.getByRole('link', { name: 'Skip to images and results' });
    expect(document.activeElement).toBe(skip);
    await user.keyboard('{Enter}');
    expect(document.activeElement).toBe(screen.getByRole('main'));
    // The address is left alone (the browser UI's URL carries its token).
    expect(window.location.hash).toBe('');
  });

  it('focus stays in the main pane when the sample button goes away', async () => {
    vi.stubGlobal('fetch', async () => new Response(new Uint8Array(PNG_1x1)));
    const user = userEvent.setup();
    const { fake } = await renderApp();
    const sample = await screen.findByRole('button', { name: 'Try a sample image' });
    sample.focus();
    await user.keyboard('{Enter}');
    await waitFor(() => expect(screen.queryByRole('button', { name: 'Try a sample image' })).toBeNull());
    expect(document.activeElement).toBe(screen.getByRole('main'));
    await act(() => fake.finishAll());
  });

  it('tile sizes read "1024 px" and the precision hint names no command', async () => {
    const user = userEvent.setup();
    await renderApp();
    await user.click(await screen.findByText('Engine settings'));
    const tile = screen.getByRole('combobox', { name: 'Tile size' });
    expect(within(tile).getByRole('option', { name: '1024 px' })).toBeTruthy();
    expect(document.body.textContent).not.toMatch(/1,024/);
    expect(document.body.textContent).not.toMatch(/crisp models quantize/);
  });

  it("a dropped file's row shows its name, never Crisp's internal drops/<uuid> path", async () => {
    const user = userEvent.setup();
    const { fake } = await renderApp();
    await user.upload(await screen.findByLabelText('Add images'), [pngFile('holiday.png')]);
    const queue = screen.getByRole('region', { name: 'Queue' });
    await waitFor(() => expect(within(queue).getAllByText('holiday.png').length).toBeGreaterThan(0));
    await user.click(screen.getByRole('button', { name: 'Upscale' }));
    await act(() => fake.finishAll());
    await waitFor(() => expect(within(queue).getByText('Kept in Crisp until you download it')).toBeTruthy());
    expect(fake.items[0]!.inputPath).toContain(`${fake.dataDir}`);
    expect(queue.innerHTML).not.toContain(fake.dataDir);
    expect(queue.textContent).not.toMatch(/Saved in/);
  });
});

describe('an output folder the service refuses (issue 41 item 8)', () => {
  it('is kept in the field with the reason right under it, not reverted with a banner off-screen', async () => {
    const user = userEvent.setup();
    const { fake } = await renderApp();
    const field = (await screen.findByRole('textbox', { name: 'Output folder' })) as HTMLInputElement;
    const before = fake.settings.outputFolder;
    await user.clear(field);
    await user.type(field, 'relative/out{Enter}');
    const reason = await within(field.closest('.field') as HTMLElement).findByRole('alert');
    expect(reason.textContent).toMatch(/relative\/out/);
    expect(field.value).toBe('relative/out');
    expect(field.getAttribute('aria-invalid')).toBe('true');
    expect(document.getElementById(field.getAttribute('aria-describedby')!)).toBe(reason);
    expect(fake.settings.outputFolder).toBe(before);
    // No second copy of it in the banner at the top of the pane.
    expect(screen.getAllByText(reason.textContent!)).toHaveLength(1);

    const good = path.join(fake.dataDir, 'results');
    await user.clear(field);
    await user.type(field, `${good}{Enter}`);
    await waitFor(() => expect(fake.settings.outputFolder).toBe(good));
    expect(within(field.closest('.field') as HTMLElement).queryByRole('alert')).toBeNull();
    expect(field.getAttribute('aria-invalid')).toBeNull();
  });
});
