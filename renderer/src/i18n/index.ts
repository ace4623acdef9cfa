/**
 * The renderer's translator: picks the catalog for a language setting (`system` follows
 * navigator.languages), fills `{name}` placeholders, chooses plural forms with Intl.PluralRules and
 * formats numbers and durations with Intl for that locale. Pure (no React), so stores can use it too.
 */
import type { Language } from '../../../app/service/crispService.js';
import type { Catalog, MessageKey, PluralForms } from './catalog.js';
import { de } from './de.js';
import { en } from './en.js';

export type Locale = Exclude<Language, 'system'>;
/** Keyed by every language the settings schema accepts: a language without a catalog is a compile error. */
const CATALOGS: Record<Locale, Catalog> = { en, de };
export const LOCALES = Object.keys(CATALOGS) as Locale[];
/** Each language's own name, shown as such in every language (so a user can always find theirs). */
export const LOCALE_NAMES: Record<Locale, string> = { en: 'English', de: 'Deutsch' };

export type Params = Readonly<Record<string, string | number>>;

export interface Translator {
  readonly locale: Locale;
  t(key: MessageKey, params?: Params): string;
  /** A number in this locale's notation (1,234.5 / 1.234,5). */
  num(n: number, options?: Intl.NumberFormatOptions): string;
  /** A short duration: "3.2 s", "1 min 15 s", "1 h 02 min" (German "3,2 s"…). */
  duration(ms: number): string;
  /** A whole percentage: "42%" / "42 %". */
  percent(value: number): string;
}

/** The first of the user's languages that has a catalog, by primary subtag (de-AT → de); else English. */
export function resolveLocale(setting: Language | undefined, preferred: readonly string[] = systemLanguages()): Locale {
  if (setting && setting !== 'system') return setting;
  for (const tag of preferred) {
    const primary = tag.toLowerCase().split('-')[0];
    const hit = LOCALES.find((l) => l === primary);
    if (hit) return hit;
  }
  return 'en';
}

function systemLanguages(): readonly string[] {
  if (typeof navigator === 'undefined') return [];
  return navigator.languages?.length ? navigator.languages : navigator.language ? [navigator.language] : [];
}

function isPlural(m: string | PluralForms): m is PluralForms {
  return typeof m !== 'string';
}

const cache = new Map<Locale, Translator>();

export function translator(locale: Locale): Translator {
  const hit = cache.get(locale);
  if (hit) return hit;
  const catalog = CATALOGS[locale];
  const numbers = new Intl.NumberFormat(locale);
  const plurals = new Intl.PluralRules(locale);
  const num = (n: number, options?: Intl.NumberFormatOptions) =>
    (options ? new Intl.NumberFormat(locale, options) : numbers).format(n);
  const t = (key: MessageKey, params: Params = {}): string => {
    const message = catalog[key];
    const n = params.n;
    const text = isPlural(message)
      ? typeof n === 'number' && plurals.select(n) === 'one'
        ? message.one
        : message.other
      : message;
    return text.replace(/\{(\w+)\}/g, (whole, name: string) => {
      const v = params[name];
      if (v === undefined) return whole;
      return typeof v === 'number' ? num(v) : v;
    });
  };
  const two = (n: number) => String(n).padStart(2, '0');
  const duration = (ms: number) => {
    const s = Math.max(0, Math.round(ms / 1000));
    if (s < 60)
      return t('duration.seconds', {
        s: ms < 10_000 ? num(Math.max(0, ms) / 1000, { minimumFractionDigits: 1, maximumFractionDigits: 1 }) : num(s),
      });
    const m = Math.floor(s / 60);
    if (m < 60) return t('duration.minutes', { m: num(m), s: two(s % 60) });
    return t('duration.hours', { h: num(Math.floor(m / 60)), m: two(m % 60) });
  };
  const percent = (value: number) => num(Math.round(value) / 100, { style: 'percent' });
  const made: Translator = { locale, t, num, duration, percent };
  cache.set(locale, made);
  return made;
}

/** English, for code that runs before settings are known and for tests of the English wording. */
export const EN = translator('en');
