/** The shape every catalog must have: exactly English's keys, each a string or the same plural forms. */
import type { en } from './en.js';

/** Plural forms by Intl.PluralRules category; `one` and `other` are what English and German use. */
export interface PluralForms {
  readonly one: string;
  readonly other: string;
}
type Widen<V> = V extends string ? string : PluralForms;
export type Catalog = { readonly [K in keyof typeof en]: Widen<(typeof en)[K]> };
export type MessageKey = keyof Catalog;
