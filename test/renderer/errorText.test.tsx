/** Failures and model descriptions in the interface language: codes → catalog sentences, service text never shown raw. */
import { describe, expect, it } from 'vitest';
import { MODEL_NAMES } from '../../engine/contract/enums.js';
import { ERROR_CODES } from '../../app/jobs/userErrors.js';
import { codeOf, connectionField, errorText, itemErrorText } from '../../renderer/src/i18n/errorText.js';
import { translator } from '../../renderer/src/i18n/index.js';
import { modelDescription } from '../../renderer/src/i18n/modelText.js';
import { en } from '../../renderer/src/i18n/en.js';
import { de } from '../../renderer/src/i18n/de.js';

const EN = translator('en');
const DE = translator('de');

describe('error sentences by code', () => {
  it('words service failures from the catalog, never with the service’s own text', () => {
    const raw = 'Bad Request: put 4xNomos8kSC.onnx in /srv/crisp/models or run "crisp models fetch"';
    expect(errorText('unauthorized', 'Unauthorized', EN)).toBe(en['error.unauthorized']);
    expect(errorText('unauthorized', 'Unauthorized', DE)).toBe(de['error.unauthorized']);
    for (const code of ['server-error', 'processing-failed', 'rate-limited', 'too-large', 'connection-refused']) {
      for (const tr of [EN, DE]) {
        const text = errorText(code, raw, tr, 'bird.png');
        expect(text).not.toContain('/srv');
        expect(text).not.toContain('crisp models');
        expect(text).toMatch(/\.$/);
      }
    }
    // The example: a model missing on the service, answered with the server's path and a CLI command.
    expect(errorText('bad-request', raw, EN, 'bird.png')).toBe(
      'The service refused bird.png with these settings. Choose another model, scale or format (or switch off Enhance faces), or use Local mode.',
    );
    expect(errorText('bad-request', raw, DE, 'bird.png')).toMatch(
      /^Der Dienst hat bird\.png mit diesen Einstellungen abgelehnt/,
    );
    expect(errorText('processing-failed', raw, DE, 'bird.png')).toBe(
      'Der Dienst konnte bird.png nicht hochskalieren. Versuchen Sie es erneut, mit einem anderen Modell oder im lokalen Modus.',
    );
  });

  it('keeps the app’s own English sentence for file problems (it names the path) and translates it otherwise', () => {
    const item = { error: 'broken.png is damaged (not a PNG).', errorCode: 'not-an-image', inputName: 'broken.png' };
    expect(itemErrorText(item, EN)).toBe('broken.png is damaged (not a PNG).');
    expect(itemErrorText(item, DE)).toBe('broken.png ist beschädigt oder kein JPG-, PNG- oder WEBP-Bild.');
    // Unclassified, or a refusal the app wrote itself: the message as it is.
    expect(errorText(undefined, 'Something odd.', DE)).toBe('Something odd.');
    expect(errorText('bad-request', 'Double upscale runs only in Local mode.', DE)).toBe(
      'Double upscale runs only in Local mode.',
    );
    // Every code the catalog words is a real ErrorCode.
    const worded = ERROR_CODES.filter((c) => errorText(c, 'RAW', DE, 'x.png') !== 'RAW');
    expect(worded.length).toBeGreaterThanOrEqual(25);
  });

  it('words the local engine’s failures from their code and params in German, and never as the service’s', () => {
    const row = (errorCode: string, error: string, errorParams?: Record<string, string>) => ({
      error,
      errorCode,
      inputName: 'bird.png',
      ...(errorParams ? { errorParams } : {}),
    });
    const missing = row('model-not-installed', "Model 'natural-max-4x' (4xNomos8kSC) is not installed. …", {
      name: 'natural-max-4x',
    });
    expect(itemErrorText(missing, DE)).toBe(
      'Das Modell natural-max-4x ist nicht installiert. Laden Sie es unter „Modelle herunterladen“ herunter oder wählen Sie ein installiertes Modell.',
    );
    // English keeps the engine's sentence (it names the files and the folder).
    expect(itemErrorText(missing, EN)).toBe(missing.error);
    // A model's name never comes from the image: without it, the message stays.
    expect(itemErrorText(row('model-not-installed', 'Model x is not installed.'), DE)).toBe(
      'Model x is not installed.',
    );
    expect(itemErrorText(row('not-enough-space', 'Not enough free disk space to upscale "bird.png": …'), DE)).toMatch(
      /^Nicht genug freier Speicherplatz, um bird\.png hochzuskalieren\./,
    );
    expect(
      itemErrorText(row('damaged-image', 'x', { name: 'bird.png', detail: 'the PNG data is cut short' }), DE),
    ).toMatch(/^bird\.png ist beschädigt: /);
    expect(
      itemErrorText(row('upscale-failed', 'x', { name: 'bird.png', detail: 'onnxruntime: bad allocation' }), DE),
    ).toBe('Beim Hochskalieren von bird.png ist etwas schiefgegangen: onnxruntime: bad allocation');
    for (const code of [
      'damaged-image',
      'unusable-image',
      'not-enough-space',
      'face-model-missing',
      'bad-model-file',
      'upscale-failed',
      'engine-crashed',
    ]) {
      const text = itemErrorText(row(code, 'RAW', { name: 'bird.png', detail: 'd' }), DE);
      expect(text, code).not.toBe('RAW');
      expect(text, code).not.toMatch(/Dienst|lokalen Modus/);
    }
  });

  it('reads the code a rejected call carried, and puts key and URL problems beside their fields', () => {
    expect(codeOf(Object.assign(new Error('x'), { code: 'unauthorized' }))).toBe('unauthorized');
    expect(codeOf(new Error('x'))).toBeUndefined();
    expect(connectionField('unauthorized')).toBe('key');
    expect(connectionField('host-not-found')).toBe('url');
    expect(connectionField('server-error')).toBeNull();
  });
});

describe('model descriptions', () => {
  it('are the catalog’s text in English and translated for every contract model in German', () => {
    const m = {
      name: 'digital-art-4x',
      kind: 'illustration' as const,
      description: 'Fast upscaler for illustrations.',
    };
    expect(modelDescription(m, 'en')).toBe('Fast upscaler for illustrations.');
    expect(modelDescription(m, 'de')).toMatch(/^Schnelles Modell für Illustrationen/);
    for (const name of MODEL_NAMES) {
      const text = modelDescription({ name, kind: 'photo', description: 'ENGLISH' }, 'de');
      expect(text).not.toBe('ENGLISH');
    }
    expect(modelDescription({ name: 'custom:mine', kind: 'custom', description: 'Imported from x.pth.' }, 'de')).toBe(
      'Imported from x.pth.',
    );
    expect(modelDescription({ name: 'service:faces', kind: 'face', description: 'x' }, 'de')).toMatch(/Dienst/);
  });
});
