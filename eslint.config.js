// The layer rule, enforced: renderer → (preload API) → electron → app → engine, never the other way.
// `npm run lint` runs only these import rules; types and style are tsc's job. README › Architecture.
import tseslint from 'typescript-eslint';

const LAYERS = 'README › Architecture: renderer → electron → app → engine';
const noUi = [
  { name: 'electron', message: `Electron is only for electron/ (${LAYERS}).` },
  { name: 'react', message: `React is only for renderer/ (${LAYERS}).` },
  { name: 'react-dom', message: `React is only for renderer/ (${LAYERS}).` },
];

const restrict = (patterns, paths = noUi) => ({
  'no-restricted-imports': ['error', { paths, patterns }],
});

export default tseslint.config(
  { ignores: ['node_modules/**', 'out/**', 'dist/**', 'release/**', 'test-results/**', '**/*.d.ts'] },
  {
    files: ['**/*.ts', '**/*.tsx'],
    languageOptions: { parser: tseslint.parser },
    linterOptions: { reportUnusedDisableDirectives: 'off' },
  },
  {
    files: ['engine/**/*.ts'],
    rules: restrict([
      {
        group: ['**/app/**', '**/electron/**', '**/renderer/**'],
        message: `engine/ is pure Node and imports no other layer (${LAYERS}).`,
      },
    ]),
  },
  {
    files: ['app/**/*.ts'],
    rules: restrict([
      {
        group: ['**/electron/**', '**/renderer/**'],
        message: `app/ is pure Node: it may import engine/, never electron/ or renderer/ (${LAYERS}).`,
      },
    ]),
  },
  {
    files: ['electron/**/*.ts'],
    rules: restrict(
      [{ group: ['**/renderer/**'], message: `electron/ talks to the page only through the preload API (${LAYERS}).` }],
      [{ name: 'react', message: `React is only for renderer/ (${LAYERS}).` }],
    ),
  },
  {
    files: ['renderer/**/*.ts', 'renderer/**/*.tsx'],
    rules: restrict(
      [
        {
          // The page sees the service interface, the preload API's types, contract enums and the pure
          // option declaration (control ranges); nothing else of the main process.
          regex:
            '(^|/)(engine/(?!contract/enums\\.js$)|app/(?!service/[\\w.-]+\\.js$|settings/upscaleOptions\\.js$)|electron/(?!preload/desktopApi\\.js$))',
          message: `renderer/ reaches the main process only through the typed preload API (${LAYERS}).`,
        },
      ],
      [{ name: 'electron', message: `The page never imports Electron: use window.crisp (${LAYERS}).` }],
    ),
  },
);
