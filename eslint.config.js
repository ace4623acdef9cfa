// The layer rule, enforced: renderer → (preload API) → electron → app → engine, never the other way.
// `npm run lint` runs only these import rules; types and style are tsc's job. docs/architecture.md.
import tseslint from 'typescript-eslint';

const LAYERS = 'docs/architecture.md: renderer → electron → app → engine';
const noUi = [
  { name: 'electron', message: `Electron is only for electron/ (${LAYERS}).` },
  { name: 'react', message: `React is only for renderer/ (${LAYERS}).` },
  { name: 'react-dom', message: `React is only for renderer/ (${LAYERS}).` },
];

const restrict = (patterns, paths = noUi) => ({
  'no-restricted-imports': ['error', { paths, patterns }],
});

// Inside engine/, five parts, one folder each, each importing only the parts listed for it: contract ← core ←
// service ← server, and convert (getting models in: downloads, imports, checkpoint conversion, int8 builds) over
// core beside the service, which no upscale loads (docs/architecture.md).
const ENGINE_IMPORTS = {
  contract: [],
  core: ['contract'],
  convert: ['contract', 'core'],
  service: ['contract', 'core'],
  server: ['contract', 'core', 'service'],
};
const ENGINE_LAYERS = 'docs/architecture.md: inside engine/, contract ← core ← service ← server, and core ← convert';
const engineOnly = {
  group: ['**/app/**', '**/electron/**', '**/renderer/**'],
  message: `engine/ is pure Node and imports no other layer (${LAYERS}).`,
};
const engineLayerRules = Object.entries(ENGINE_IMPORTS).map(([layer, below]) => {
  const others = Object.keys(ENGINE_IMPORTS).filter((part) => part !== layer && !below.includes(part));
  return {
    files: [`engine/${layer}/**/*.ts`],
    rules: restrict([
      engineOnly,
      {
        // Relative imports from anywhere inside engine/ name the part's folder on their way there.
        group: others.map((part) => `**/${part}/**`),
        message: `engine/ ${layer} imports only the layers below it${below.length ? ` (${below.join(', ')})` : ''}, never ${others.join(' or ')} (${ENGINE_LAYERS}).`,
      },
    ]),
  };
});

// app/ and electron/ use the engine only through a part's public entry, engine/<part>/index.js, which exports
// its light modules as they are and its heavy ones behind loaders (docs/architecture.md).
const ENTRIES =
  'docs/architecture.md: app/ and electron/ use each engine part through its entry, engine/<part>/index.js';
const ENTRY_FILE = '(contract|core|convert|service|server)/index\\.js$';
/** `allow`: modules, relative to engine/, that a file may still import directly. */
const engineEntriesOnly = (allow = []) => ({
  regex: `(^|/)engine/(?!${[ENTRY_FILE, ...allow.map((m) => `${m.replace(/[.]/g, '\\.')}$`)].join('|')})`,
  message: `Import the engine part's public entry, engine/<part>/index.js, not a module inside it (${ENTRIES}).`,
});
// no-restricted-imports does not see import(): the same rule for dynamic imports.
const noDeepDynamicEngine = {
  'no-restricted-syntax': [
    'error',
    {
      selector: `ImportExpression[source.value=/(^|\\/)engine\\/(?!${ENTRY_FILE.replace('/', '\\/')})/]`,
      message: `Load a heavy engine module through its part's entry (engine/<part>/index.js), e.g. loadModelCatalog() (${ENTRIES}).`,
    },
  ],
};
const appOnly = {
  group: ['**/electron/**', '**/renderer/**'],
  message: `app/ is pure Node: it may import engine/, never electron/ or renderer/ (${LAYERS}).`,
};

export default tseslint.config(
  { ignores: ['node_modules/**', 'out/**', 'dist/**', 'release/**', 'test-results/**', '**/*.d.ts'] },
  {
    files: ['**/*.ts', '**/*.tsx'],
    languageOptions: { parser: tseslint.parser },
    linterOptions: { reportUnusedDisableDirectives: 'off' },
  },
  {
    files: ['engine/**/*.ts'],
    rules: restrict([engineOnly]),
  },
  ...engineLayerRules,
  {
    files: ['app/**/*.ts'],
    rules: {
      ...restrict([appOnly, engineEntriesOnly()]),
      ...noDeepDynamicEngine,
    },
  },
  {
    // Shared with the renderer (its option controls): the renderer's bundle and typecheck must see no Node, and
    // core's and the service's entries bring Node with them, so this file names the plain-data modules it reads.
    files: ['app/settings/upscaleOptions.ts'],
    rules: restrict([
      appOnly,
      engineEntriesOnly([
        'contract/enums.js',
        'core/inference/providers.js',
        'core/pipeline/metadataPolicy.js',
        'core/models/modelNames.js',
        'service/tasks/outputNames.js',
      ]),
    ]),
  },
  {
    files: ['electron/**/*.ts'],
    rules: {
      ...restrict(
        [
          {
            group: ['**/renderer/**'],
            message: `electron/ talks to the page only through the preload API (${LAYERS}).`,
          },
          engineEntriesOnly(),
        ],
        [{ name: 'react', message: `React is only for renderer/ (${LAYERS}).` }],
      ),
      ...noDeepDynamicEngine,
    },
  },
  {
    files: ['renderer/**/*.ts', 'renderer/**/*.tsx'],
    rules: restrict(
      [
        {
          // The page sees the service interface, the preload API's types, contract enums, the error catalog
          // (plain data: the codes it translates), the output geometry (plain arithmetic: the size a row will get)
          // and the pure option declaration (control ranges); nothing else of the main process.
          regex:
            '(^|/)(engine/(?!contract/(enums|errorCatalog|geometry)\\.js$)|app/(?!service/[\\w.-]+\\.js$|settings/upscaleOptions\\.js$)|electron/(?!preload/desktopApi\\.js$))',
          message: `renderer/ reaches the main process only through the typed preload API (${LAYERS}).`,
        },
      ],
      [{ name: 'electron', message: `The page never imports Electron: use window.crisp (${LAYERS}).` }],
    ),
  },
);
