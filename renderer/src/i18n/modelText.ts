/**
 * Model descriptions in the interface language. English is the model catalog's own text
 * (resources/models/catalog.json, answered by listModels), so it has one source; other languages
 * translate it here per contract model name — a Record over MODEL_NAMES, so a model added to the
 * contract without a translation is a compile error. Imported models keep the text they were given.
 */
import type { ModelName } from '../../../engine/contract/enums.js';
import type { ModelInfo } from '../../../app/service/crispService.js';
import type { Locale } from './index.js';

type Translations = {
  readonly models: Readonly<Record<ModelName, string>>;
  readonly face: string;
  readonly serviceFace: string;
};

const DE: Translations = {
  models: {
    'service-standard-4x': 'Ausgewogenes Allzweckmodell für Fotos aus dem Alltag (Real-ESRGAN x4plus).',
    'service-lite-4x': 'Schnelles Allzweckmodell für Fotos mit leichter Rauschminderung (Real-ESRGAN general v3).',
    'clear-boost-4x':
      'Entfernt Rauschen und JPEG-Artefakte aus Fotos geringer Qualität (Real-ESRGAN general v3, schwache Rauschminderung).',
    'crystal-plus-4x': 'Scharfe, getreue Details für Fotos guter Qualität (LSDIR Compact C3).',
    'digital-art-4x': 'Schnelles Modell für Illustrationen, Anime und flächige Grafik (Real-ESRGAN AnimeVideo v3).',
    'digital-art-plus-4x': 'Hochwertiges Modell für Anime und Illustrationen (Real-ESRGAN x4plus anime 6B).',
    'natural-max-4x': 'Die natürlichsten Ergebnisse bei komprimierten Fotos aus dem Alltag (4xNomos8kSC).',
    'natural-plus-4x': 'Detailreiches Fotomodell, robust gegen Unschärfe, Rauschen und Kompression (4xLSDIRplusC).',
    'nature-boost-4x': 'Für Landschaften und stark beschädigte Fotos, ohne Annahmen über die Schäden (BSRGAN).',
    'pure-boost-4x': 'Glatte Vergrößerung ohne Artefakte und ohne GAN-Texturen (Real-ESRNet x4plus).',
    'quick-clear-4x': 'Sehr schnelles Modell für saubere Fotos guter Qualität (4xLSDIRCompact).',
    'texture-boost-4x': 'Stellt feine Texturen wie Haare, Stoff und Laub auf sauberen Fotos wieder her (4xLSDIR).',
  },
  face: 'Gesichtsrestaurierung für „Gesichter verbessern“.',
  serviceFace: 'Gesichter werden vom Dienst restauriert (+1 Credit pro Bild).',
};

const TRANSLATIONS: Partial<Record<Locale, Translations>> = { de: DE };

/** The cloud list's face entry (app/service/modelMethods.ts SERVICE_FACES), named here to stay DOM-side only. */
const SERVICE_FACES = 'service:faces';

export function modelDescription(model: Pick<ModelInfo, 'name' | 'kind' | 'description'>, locale: Locale): string {
  const tr = TRANSLATIONS[locale];
  if (!tr) return model.description;
  if (model.name === SERVICE_FACES) return tr.serviceFace;
  if (model.kind === 'face') return tr.face;
  return (tr.models as Readonly<Record<string, string>>)[model.name] ?? model.description;
}
