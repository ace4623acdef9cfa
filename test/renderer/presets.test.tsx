// @vitest-environment jsdom
/**
 * The preset picker in the options panel, against the real app layer (the fake service wraps createService):
 * choosing a preset fills the options, "Save as…" makes one from the current options, rename and delete act
 * on the presets file, and a tampered import file is refused with the store's sentence.
 */
import { readFile } from 'node:fs/promises';
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

describe('preset picker', () => {
  it('chooses, saves, renames and deletes presets; the options panel follows', async () => {
    const user = userEvent.setup();
    const { fake } = await renderApp({ settings: { scale: 4, format: 'png' } });
    const picker = await screen.findByTestId('preset-picker');
    const select = within(picker).getByRole('combobox', { name: 'Preset' });
    // The settings (×4 PNG) are none of the presets: the box says so instead of naming one.
    await waitFor(() =>
      expect(
        within(select)
          .getAllByRole('option')
          .map((o) => o.textContent),
      ).toEqual(['Custom', 'Photos', 'Illustrations', 'Print ×2 lossless']),
    );
    expect((select as HTMLSelectElement).selectedOptions[0]?.textContent).toBe('Custom');

    await user.selectOptions(select, 'Print ×2 lossless');
    await waitFor(() =>
      expect([fake.settings.scale, fake.settings.format, fake.settings.compression]).toEqual([2, 'png', 0]),
    );
    expect((screen.getByRole('combobox', { name: 'Scale' }) as HTMLSelectElement).value).toBe('2');

    await waitFor(() => expect((select as HTMLSelectElement).value).toBe('Print ×2 lossless'));

    // A hand change: the preset no longer describes the settings.
    await user.selectOptions(screen.getByRole('combobox', { name: 'Format' }), 'webp');
    await waitFor(() => expect(fake.settings.format).toBe('webp'));
    await waitFor(() => expect((select as HTMLSelectElement).selectedOptions[0]?.textContent).toBe('Custom'));
    await user.click(within(picker).getByRole('button', { name: 'Save as…' }));
    await user.type(within(picker).getByRole('textbox', { name: 'Name of the new preset' }), 'Web x2{Enter}');
    await waitFor(() => expect((select as HTMLSelectElement).value).toBe('Web x2'));
    const file = path.join(fake.dataDir, 'presets.json');
    const stored = () =>
      readFile(file, 'utf8').then(
        (t) =>
          JSON.parse(t) as {
            presets: { name: string; options: { format: string; scale: number } }[];
            defaultPreset: string;
          },
      );
    expect((await stored()).presets).toMatchObject([{ name: 'Web x2', options: { format: 'webp', scale: 2 } }]);

    await user.click(within(picker).getByRole('button', { name: 'Rename…' }));
    const rename = within(picker).getByRole('textbox', { name: 'New name of the preset' });
    await user.clear(rename);
    await user.type(rename, 'Photos{Enter}');
    // A name that is taken: the sentence from main, and nothing renamed.
    expect((await within(picker).findByRole('alert')).textContent).toBe(
      'A preset named "Photos" already exists: choose another name.',
    );
    await user.clear(rename);
    await user.type(rename, 'Web double{Enter}');
    await waitFor(() => expect((select as HTMLSelectElement).value).toBe('Web double'));
    expect(await stored()).toMatchObject({ defaultPreset: 'Web double', presets: [{ name: 'Web double' }] });

    await user.click(within(picker).getByRole('button', { name: 'Delete' }));
    // The default falls back to Photos, but the settings are still the deleted preset's: "Custom".
    await waitFor(() => expect((select as HTMLSelectElement).selectedOptions[0]?.textContent).toBe('Custom'));
    expect((await stored()).presets).toEqual([]);
    // Built-ins offer neither rename nor delete.
    expect(within(picker).queryByRole('button', { name: 'Delete' })).toBeNull();
  });

  it('imports a presets file and refuses a tampered one with a sentence', async () => {
    const user = userEvent.setup();
    await renderApp();
    const picker = await screen.findByTestId('preset-picker');
    const input = within(picker).getByLabelText('Presets file to import') as HTMLInputElement;
    const options = {
      model: 'digital-art-4x',
      scale: 3,
      passes: 1,
      format: 'jpg',
      compression: 10,
      denoise: 1,
      face: false,
      faceModel: null,
      faceStrength: 1,
      outputFolder: '',
      template: '{name}-big.{ext}',
      metadata: 'strip',
      overwrite: 'keep',
      preModel: null,
    };
    const good = JSON.stringify({ crispPresets: 1, presets: [{ name: 'Comics', options }] });
    await user.upload(input, new File([good], 'presets.json', { type: 'application/json' }));
    expect((await within(picker).findByRole('status')).textContent).toBe('Imported Comics.');
    const bad = JSON.stringify({
      crispPresets: 1,
      presets: [{ name: 'Evil', options: { ...options, format: 'exe' } }],
    });
    await user.upload(input, new File([bad], 'presets.json', { type: 'application/json' }));
    expect((await within(picker).findByRole('alert')).textContent).toBe(
      'This presets file was refused (presets[0].options.format: must be one of jpg, png, webp): nothing was imported. Export the presets again from Crisp.',
    );
    const select = within(picker).getByRole('combobox', { name: 'Preset' });
    expect(
      within(select)
        .getAllByRole('option')
        .map((o) => o.textContent)
        .filter((name) => name !== 'Custom'),
    ).toEqual(['Photos', 'Illustrations', 'Print ×2 lossless', 'Comics']);
  });
});
