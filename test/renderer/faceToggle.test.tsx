// @vitest-environment jsdom
/** The "Enhance faces" toggle: usable with a face model, disabled with the reason and the way out without. */
import { act, cleanup, fireEvent, screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { afterEach, describe, expect, it } from 'vitest';
import { pngFile, renderApp } from './renderApp.js';

afterEach(cleanup);

describe('face toggle', () => {
  it('is disabled locally when no face model is installed, saying how to get one', async () => {
    renderApp({ noFaceModel: true });
    const toggle = (await screen.findByRole('checkbox', { name: 'Enhance faces' })) as HTMLInputElement;
    await waitFor(() => expect(toggle.disabled).toBe(true));
    expect(toggle.getAttribute('aria-describedby')).toBeTruthy();
    const hint = document.getElementById(toggle.getAttribute('aria-describedby')!)!;
    expect(hint.textContent).toBe(
      'No face model is installed. Download GFPGAN v1.4 under “Download models” above, import a GFPGAN .pth or ONNX face model, or switch to Cloud.',
    );
  });

  it('offers GFPGAN v1.4 under Download models with size and licence; the hint opens it; a download can be cancelled', async () => {
    const user = userEvent.setup();
    const { fake } = await renderApp({ noFaceModel: true });
    await user.click(await screen.findByRole('button', { name: 'Show face model download' }));
    const details = document.getElementById('model-downloads') as HTMLDetailsElement;
    expect(details.open).toBe(true);
    const row = within(screen.getByRole('list', { name: 'Models to download' }))
      .getAllByRole('listitem')
      .find((li) => li.textContent?.startsWith('GFPGAN v1.4'))!;
    expect(row.textContent).toContain('(332.5 MB · Apache-2.0)');
    await user.click(within(row).getByRole('button', { name: 'Download GFPGAN v1.4' }));
    await act(async () => fake.progressDownload('gfpgan-1.4', 400));
    expect(
      (within(row).getByRole('progressbar', { name: 'Downloading GFPGAN v1.4' }) as HTMLProgressElement).value,
    ).toBe(400);
    await user.click(within(row).getByRole('button', { name: 'Cancel the download of GFPGAN v1.4' }));
    expect(await within(row).findByText('Download cancelled: downloading again resumes it.')).toBeTruthy();
    expect(fake.calls.filter((c) => c.method === 'cancelDownload').map((c) => c.args)).toEqual([['gfpgan-1.4']]);
    // A cancel is not an error: no alert, and Download is offered again.
    expect(screen.queryByRole('alert')).toBeNull();
    expect(within(row).getByRole('button', { name: 'Download GFPGAN v1.4' })).toBeTruthy();
    // Installed: the toggle can be used.
    await user.click(within(row).getByRole('button', { name: 'Download GFPGAN v1.4' }));
    await act(() => fake.finishDownload('gfpgan-1.4'));
    const toggle = screen.getByRole('checkbox', { name: 'Enhance faces' }) as HTMLInputElement;
    await waitFor(() => expect(toggle.disabled).toBe(false));
  });

  it('in Cloud mode follows the service: disabled with the reason when it offers no face enhancement', async () => {
    renderApp({ settings: { mode: 'cloud' }, apiKey: 'k', serviceFaces: false });
    const toggle = (await screen.findByRole('checkbox', { name: 'Enhance faces' })) as HTMLInputElement;
    await waitFor(() => expect(toggle.disabled).toBe(true));
    const hint = document.getElementById(toggle.getAttribute('aria-describedby')!)!;
    expect(hint.textContent).toBe(
      'This service does not offer face enhancement. Switch to Local with a face model installed.',
    );
  });

  it('in Cloud mode is enabled when the service offers faces, and the service entry is not a pickable model', async () => {
    renderApp({ settings: { mode: 'cloud' }, apiKey: 'k' });
    const toggle = (await screen.findByRole('checkbox', { name: 'Enhance faces' })) as HTMLInputElement;
    await waitFor(() => expect(toggle.disabled).toBe(false));
    const picker = screen.getByRole('combobox', { name: 'Model' }) as HTMLSelectElement;
    expect(Array.from(picker.options).map((o) => o.value)).not.toContain('service:faces');
  });

  it('a finished image says how many faces were found and enhanced', async () => {
    const user = userEvent.setup();
    const { fake } = await renderApp();
    const toggle = (await screen.findByRole('checkbox', { name: 'Enhance faces' })) as HTMLInputElement;
    await waitFor(() => expect(toggle.disabled).toBe(false));
    await user.click(toggle);
    await waitFor(() => expect(toggle.checked).toBe(true));
    await user.upload(screen.getByLabelText('Add images'), [pngFile('portrait.png')]);
    const list = () => within(screen.getByRole('list', { name: 'Images' }));
    await waitFor(() => expect(list().getAllByRole('listitem')).toHaveLength(1));
    await user.click(screen.getByRole('button', { name: 'Upscale' }));
    await act(() => fake.finishAll());
    await waitFor(() => expect(list().getByTestId('item-faces').textContent).toBe('Faces: 1 of 2 enhanced'));
  });

  it('with faces on, picks the face model and the strength (Local mode)', async () => {
    const user = userEvent.setup();
    const { fake } = await renderApp();
    const toggle = (await screen.findByRole('checkbox', { name: 'Enhance faces' })) as HTMLInputElement;
    await waitFor(() => expect(toggle.disabled).toBe(false));
    expect(screen.queryByRole('combobox', { name: 'Face model' })).toBeNull();
    await user.click(toggle);
    const picker = (await screen.findByRole('combobox', { name: 'Face model' })) as HTMLSelectElement;
    expect(Array.from(picker.options).map((o) => [o.value, o.textContent])).toEqual([
      ['', 'Best installed'],
      ['gfpgan-1.4', 'GFPGAN v1.4'],
    ]);
    await user.selectOptions(picker, 'gfpgan-1.4');
    await waitFor(() => expect(fake.settings.faceModel).toBe('gfpgan-1.4'));
    const strength = screen.getByRole('slider', { name: 'Face strength' }) as HTMLInputElement;
    expect([strength.min, strength.max, strength.step, strength.value]).toEqual(['0', '1', '0.05', '1']);
    fireEvent.change(strength, { target: { value: '0.6' } });
    await waitFor(() => expect(fake.settings.faceStrength).toBe(0.6));
  });

  it('is enabled with a face model, and face models stay out of the upscaling model picker', async () => {
    renderApp();
    const toggle = (await screen.findByRole('checkbox', { name: 'Enhance faces' })) as HTMLInputElement;
    await waitFor(() => expect(toggle.disabled).toBe(false));
    const picker = screen.getByRole('combobox', { name: 'Model' }) as HTMLSelectElement;
    expect(Array.from(picker.options).map((o) => o.value)).not.toContain('gfpgan-1.4');
  });
});
