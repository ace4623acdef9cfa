// @vitest-environment jsdom
/**
 * The interface in more than one language: the catalogs agree key for key and placeholder for
 * placeholder, the language follows the system unless chosen in settings, and the main states rendered
 * in German show German text with no English catalog sentence left over.
 */
import { act, cleanup, screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { PluralForms } from '../../renderer/src/i18n/catalog.js';
import { de } from '../../renderer/src/i18n/de.js';
import { en } from '../../renderer/src/i18n/en.js';
import { resolveLocale, translator } from '../../renderer/src/i18n/index.js';
import { batchSummary, countStates, statusLine } from '../../renderer/src/stores/statusModel.js';
import { closeFakes } from './fakeService.js';
import { pngFile, renderApp } from './renderApp.js';

afterEach(async () => {
  vi.restoreAllMocks();
  cleanup();
  await closeFakes();
  document.documentElement.lang = '';
});

type Entry = string | PluralForms;
const forms = (m: Entry): string[] => (typeof m === 'string' ? [m] : [m.one, m.other]);
const placeholders = (m: Entry) =>
  [...new Set(forms(m).flatMap((f) => [...f.matchAll(/\{(\w+)\}/g)].map((x) => x[1])))].sort();

describe('catalogs', () => {
  it('German has exactly the English keys, the same plural shape and the same placeholders', () => {
    expect(Object.keys(de).sort()).toEqual(Object.keys(en).sort());
    for (const [key, message] of Object.entries(en) as [keyof typeof en, Entry][]) {
      const other: Entry = de[key];
      expect(typeof other, key).toBe(typeof message);
      // A plural's `one` form may leave out {n} ("One file…"), so placeholders are compared over all forms.
      expect(placeholders(other), key).toEqual(placeholders(message));
    }
  });

  it('is translated, not copied: most German sentences differ from the English ones', () => {
    const same = (Object.keys(en) as (keyof typeof en)[]).filter(
      (k) => JSON.stringify(en[k]) === JSON.stringify(de[k]),
    );
    // What may stay the same: product names, units, formats and symbols.
    expect(same.sort()).toEqual(
      [
        'app.title',
        'compare.oneToOne',
        'counts.separator',
        'credits.title',
        'downloads.progress',
        'downloads.progressOf',
        'downloads.size',
        'duration.hours',
        'duration.minutes',
        'duration.seconds',
        'engine.coreml',
        'engine.dml',
        'engine.px',
        'engine.threads',
        'mode.cloud',
        'options.format',
        'options.passesTotal',
        'queue.credits',
        'theme.system',
      ]
        .filter((k) => k in en)
        .sort(),
    );
  });
});

describe('choosing the language', () => {
  it('follows the system languages by primary subtag unless settings name one', () => {
    expect(resolveLocale('system', ['de-AT', 'en-US'])).toBe('de');
    expect(resolveLocale('system', ['fr-FR', 'en-GB', 'de'])).toBe('en');
    expect(resolveLocale('system', ['fr-FR'])).toBe('en');
    expect(resolveLocale('en', ['de-DE'])).toBe('en');
    expect(resolveLocale('de', ['en-US'])).toBe('de');
  });

  it('formats numbers, durations, percentages and plurals for the locale', () => {
    const de = translator('de');
    const en = translator('en');
    expect([de.duration(3_240), de.duration(75_000), de.duration(3_720_000)]).toEqual([
      '3,2 s',
      '1 min 15 s',
      '1 h 02 min',
    ]);
    expect(en.duration(3_240)).toBe('3.2 s');
    expect([de.t('credits.amount', { n: 1 }), de.t('credits.amount', { n: 1234 })]).toEqual([
      '1 Credit',
      '1.234 Credits',
    ]);
    expect([en.t('credits.amount', { n: 1 }), en.t('credits.amount', { n: 1234 })]).toEqual([
      '1 credit',
      '1,234 credits',
    ]);
    expect(de.percent(42).replace(/\s/g, ' ')).toBe('42 %');
    expect(en.percent(42)).toBe('42%');
    expect(batchSummary({ done: 1, failed: 2, total: 3 }, de).text).toBe(
      'Abgeschlossen: 1 von 3 Bildern hochskaliert, 2 fehlgeschlagen.',
    );
    expect(batchSummary({ done: 1, failed: 0, total: 1 }, de).text).toBe('Abgeschlossen: 1 von 1 Bild hochskaliert.');
    expect(statusLine(countStates([{ status: 'queued' }, { status: 'done' }]), false, de)).toBe(
      'Bereit: 1 wartend · 1 fertig',
    );
  });
});

/** Every English sentence of the catalog whose German differs (with no placeholders, so it can be matched whole). */
const englishOnly = (Object.keys(en) as (keyof typeof en)[])
  .flatMap((k) => {
    const e: Entry = en[k];
    const g: Entry = de[k];
    return forms(e).filter((f, i) => f !== forms(g)[i] && !f.includes('{'));
  })
  .map((f) => f.trim())
  // A word that is also German elsewhere ("System" for the theme) is not a leak.
  .filter((f) => f.length > 2 && !Object.values(de).some((g: Entry) => forms(g).some((x) => x.trim() === f)));

/** All text a user can see or hear: text nodes and the accessible attributes. */
function shownTexts(): string[] {
  const out: string[] = [];
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let n = walker.nextNode(); n; n = walker.nextNode()) out.push(n.textContent ?? '');
  for (const el of document.body.querySelectorAll('*')) {
    for (const a of ['aria-label', 'alt', 'title', 'placeholder', 'aria-valuetext']) {
      const v = el.getAttribute(a);
      if (v) out.push(v);
    }
  }
  return out.map((t) => t.trim()).filter(Boolean);
}

function expectNoEnglish(state: string) {
  const texts = shownTexts();
  // Short words are compared whole (a model's English description may say "Model"); sentences anywhere.
  const leaks = englishOnly.filter((e) => texts.some((t) => t === e || (e.length >= 16 && t.includes(e))));
  expect(leaks, state).toEqual([]);
}

describe('the app in German', () => {
  it('shows German in every main state, with <html lang="de"> and no English catalog text', async () => {
    const user = userEvent.setup();
    const { fake } = await renderApp({ settings: { language: 'de' }, failNames: /^b\.png$/ });
    // Empty state.
    expect(await screen.findByRole('heading', { name: 'Hochskalieren in drei Schritten' })).toBeTruthy();
    await waitFor(() => expect(document.documentElement.lang).toBe('de'));
    expect(screen.getByRole('button', { name: 'Beispielbild ausprobieren' })).toBeTruthy();
    expect(screen.getByTestId('batch-status').textContent).toBe(
      'Noch nichts zu tun: Fügen Sie Bilder hinzu, um zu beginnen.',
    );
    expectNoEnglish('empty');

    // Queued.
    await user.upload(screen.getByLabelText('Bilder hinzufügen'), ['a.png', 'b.png'].map(pngFile));
    const images = () => within(screen.getByRole('list', { name: 'Bilder' }));
    await waitFor(() => expect(images().getAllByRole('listitem')).toHaveLength(2));
    await waitFor(() => expect(screen.getByTestId('batch-status').textContent).toBe('Bereit: 2 wartend'));
    expectNoEnglish('queued');

    // Running.
    await user.click(screen.getByRole('button', { name: 'Hochskalieren' }));
    await act(() => fake.step(50));
    await waitFor(() =>
      expect(screen.getByTestId('batch-status').textContent).toMatch(/^Hochskalieren: 1 in Arbeit · 1 wartend$/),
    );
    expect(images().getByText(/^Wird hochskaliert … \d+\s%$/)).toBeTruthy();
    expectNoEnglish('running');

    // Done and failed, with the end-of-batch banner.
    await act(() => fake.finishAll());
    await waitFor(() =>
      expect(screen.getByRole('alert').textContent).toMatch(
        'Abgeschlossen: 1 von 2 Bildern hochskaliert, 1 fehlgeschlagen.',
      ),
    );
    expect(images().getByText(/^Fertig in \d+,\d s$/)).toBeTruthy();
    expect(screen.getByRole('button', { name: 'b.png wiederholen' })).toBeTruthy();
    expect(screen.getByTestId('queue-counts').textContent).toBe('1 fertig · 1 fehlgeschlagen');
    expectNoEnglish('done');

    // Compare dialog.
    await user.click(screen.getByRole('button', { name: 'a.png vergleichen' }));
    const dialog = await screen.findByRole('dialog', { name: 'a.png vergleichen' });
    expect(within(dialog).getByRole('slider', { name: 'Vergleichen' }).getAttribute('aria-valuetext')).toMatch(
      /^50\s% vorher$/,
    );
    expectNoEnglish('compare');
    await user.click(within(dialog).getByRole('button', { name: 'Vergleich schließen' }));

    // Shortcuts help.
    await user.click(screen.getByRole('button', { name: 'Tastenkürzel' }));
    const help = await screen.findByRole('dialog', { name: 'Tastenkürzel' });
    expect(within(help).getByText('Strg/⌘ + Eingabe')).toBeTruthy();
    expectNoEnglish('shortcuts');
    await user.click(within(help).getByRole('button', { name: 'Schließen' }));
  });

  it('shows the Cloud connect card in German, and switching to English in settings changes the page and <html lang>', async () => {
    const user = userEvent.setup();
    const { fake } = await renderApp({ settings: { language: 'de', baseUrl: '' } });
    await user.click(await screen.findByRole('radio', { name: 'Cloud' }));
    const card = await screen.findByRole('region', { name: 'Mit einem Hochskalierungsdienst verbinden' });
    await user.type(within(card).getByRole('textbox', { name: 'API-Schlüssel' }), 'k-1');
    await user.click(within(card).getByRole('button', { name: 'Verbindung testen' }));
    await waitFor(() =>
      expect(within(card).getByRole('alert').textContent).toBe(
        'Geben Sie zuerst die Dienst-URL ein (zum Beispiel https://upscale.example.com).',
      ),
    );
    expectNoEnglish('cloud card');

    await user.selectOptions(screen.getByRole('combobox', { name: 'Sprache' }), 'en');
    await waitFor(() => expect(fake.settings.language).toBe('en'));
    expect(await screen.findByRole('region', { name: 'Connect to an upscaling service' })).toBeTruthy();
    await waitFor(() => expect(document.documentElement.lang).toBe('en'));
  });

  it('follows navigator.languages when the setting is "system"', async () => {
    vi.spyOn(navigator, 'languages', 'get').mockReturnValue(['de-CH', 'en']);
    await renderApp();
    expect(await screen.findByRole('heading', { name: 'Hochskalieren in drei Schritten' })).toBeTruthy();
    expect((screen.getByRole('combobox', { name: 'Sprache' }) as HTMLSelectElement).value).toBe('system');
    await waitFor(() => expect(document.documentElement.lang).toBe('de'));
  });
});
