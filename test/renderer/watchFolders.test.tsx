// @vitest-environment jsdom
/** The watched-folders panel against the real app layer: add with a preset, pause/resume, remove, and a refusal. */
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { cleanup, screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { afterEach, describe, expect, it } from 'vitest';
import { closeFakes } from './fakeService.js';
import { renderApp } from './renderApp.js';

afterEach(async () => {
  cleanup();
  await closeFakes();
});

describe('watched folders panel', () => {
  it('adds a folder with a preset, pauses and resumes it, and stops watching it', async () => {
    const user = userEvent.setup();
    const { fake } = await renderApp();
    const panel = await screen.findByTestId('watch-folders');
    const folder = within(panel).getByRole('textbox', { name: 'Folder to watch' });
    await user.type(folder, 'relative/folder');
    await waitFor(() =>
      expect(
        within(within(panel).getByRole('combobox', { name: 'Preset for the watched folder' })).getAllByRole('option'),
      ).toHaveLength(3),
    );
    await user.click(within(panel).getByRole('button', { name: 'Watch' }));
    expect((await within(panel).findByRole('alert')).textContent).toBe(
      'The folder to watch must be a full path, not "relative/folder".',
    );

    const dir = path.join(fake.dataDir, 'scans');
    await mkdir(dir);
    await user.clear(folder);
    await user.type(folder, dir);
    await user.selectOptions(
      within(panel).getByRole('combobox', { name: 'Preset for the watched folder' }),
      'Illustrations',
    );
    await user.click(within(panel).getByRole('checkbox', { name: 'Sub-folders' }));
    await user.click(within(panel).getByRole('button', { name: 'Watch' }));
    const row = await within(panel).findByTestId('watch-row');
    expect(row.textContent).toContain(dir);
    expect(row.textContent).toContain('Illustrations: 0 done · 0 failed · 0 waiting');
    expect(await fake.listWatches()).toMatchObject([{ dir, preset: 'Illustrations', recursive: true, paused: false }]);

    // Each folder's buttons are named after it (a screen reader lists them out of their row).
    await user.click(within(row).getByRole('button', { name: `Pause watching ${dir}` }));
    await waitFor(() => expect(within(panel).getByTestId('watch-row').textContent).toContain('· paused'));
    expect((await fake.listWatches())[0]!.paused).toBe(true);
    await user.click(within(panel).getByRole('button', { name: `Resume watching ${dir}` }));
    await waitFor(() => expect(within(panel).getByTestId('watch-row').textContent).not.toContain('paused'));
    await user.click(within(panel).getByRole('button', { name: `Stop watching ${dir}` }));
    await waitFor(() => expect(within(panel).queryByTestId('watch-row')).toBeNull());
    expect(await fake.listWatches()).toEqual([]);
  });

  it('a Cloud folder says what each image costs and asks once before spending (issue 41 item 2)', async () => {
    const user = userEvent.setup();
    const { fake } = await renderApp({ apiKey: 'k', balance: 50 });
    const panel = await screen.findByTestId('watch-folders');
    const dir = path.join(fake.dataDir, 'inbox');
    await mkdir(dir);
    await user.type(within(panel).getByRole('textbox', { name: 'Folder to watch' }), dir);
    await waitFor(() =>
      expect(
        within(within(panel).getByRole('combobox', { name: 'Preset for the watched folder' })).getAllByRole('option'),
      ).toHaveLength(3),
    );
    await user.selectOptions(
      within(panel).getByRole('combobox', { name: 'Preset for the watched folder' }),
      'Illustrations',
    );
    await user.selectOptions(within(panel).getByRole('combobox', { name: 'Where the watched folder runs' }), 'cloud');
    await user.click(within(panel).getByRole('button', { name: 'Watch' }));
    const row = await within(panel).findByTestId('watch-row');
    // Illustrations is ×4: the price table's ×4 price, per image.
    const perImage = (await fake.listWatches())[0]!.creditsPerImage!;
    expect(perImage).toBeGreaterThan(0);
    expect(row.textContent).toContain(`Cloud, ${perImage} credits per image`);
    expect(row.textContent).toContain(`Nothing is sent until you allow it: each image costs ${perImage} credits.`);
    // The app stays in Local mode: the folder chose Cloud for itself.
    expect(fake.settings.mode).toBe('local');
    await user.click(within(row).getByRole('button', { name: `Allow spending credits for ${dir}` }));
    await waitFor(() => expect(within(panel).getByTestId('watch-row').textContent).not.toContain('Nothing is sent'));
    expect(await fake.listWatches()).toMatchObject([{ dir, mode: 'cloud', spendAllowed: true }]);
  });
});
