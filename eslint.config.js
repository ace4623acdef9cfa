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

// Inside engine/, four groups, each importing only the groups below it: contract ← core ← service ← server
// (docs/architecture.md). Folders stay where they are; a group is a list of them.
const ENGINE_GROUPS = {
  contract: ['contract'],
  core: ['core', 'pipeline', 'inference', 'faces', 'convert', 'models'],
  service: ['accounts', 'credits', 'tasks', 'uploads', 'quotas', 'db', 'storage', 'inputs', 'security'],
  server: ['server'],
};
/** Top-level files of engine/ that belong to the service group. */
const SERVICE_FILES = ['engine', 'embeddedEngine', 'postgresEngine', 'localFiles', 's3Objects', 'api', 'limits'];
const ENGINE_ORDER = ['contract', 'core', 'service', 'server'];
const ENGINE_LAYERS = 'docs/architecture.md: inside engine/, contract ← core ← service ← server';
const engineOnly = {
  group: ['**/app/**', '**/electron/**', '**/renderer/**'],
  message: `engine/ is pure Node and imports no other layer (${LAYERS}).`,
};
/** Import patterns that reach a group (relative imports from anywhere inside engine/). */
const groupPatterns = (g) => [
  ...ENGINE_GROUPS[g].map((dir) => `**/${dir}/**`),
  ...(g === 'service' ? SERVICE_FILES.flatMap((f) => [`../${f}.js`, `./${f}.js`, `../../${f}.js`]) : []),
];
/** Files of a group, as eslint globs. */
const groupFiles = (g) => [
  ...ENGINE_GROUPS[g].map((dir) => `engine/${dir}/**/*.ts`),
  ...(g === 'service' ? SERVICE_FILES.map((f) => `engine/${f}.ts`) : []),
];
const engineGroupRules = ENGINE_ORDER.slice(0, -1).map((g, i) => ({
  files: groupFiles(g),
  rules: restrict([
    engineOnly,
    {
      group: ENGINE_ORDER.slice(i + 1).flatMap(groupPatterns),
      message: `engine/ ${g} imports only the groups below it, never ${ENGINE_ORDER.slice(i + 1).join(' or ')} (${ENGINE_LAYERS}).`,
    },
  ]),
}));

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
  ...engineGroupRules,
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
          // The page sees the service interface, the preload API's types, contract enums, the error catalog
          // (plain data: the codes it translates) and the pure option declaration (control ranges); nothing else
          // of the main process.
          regex:
            '(^|/)(engine/(?!contract/(enums|errorCatalog)\\.js$)|app/(?!service/[\\w.-]+\\.js$|settings/upscaleOptions\\.js$)|electron/(?!preload/desktopApi\\.js$))',
          message: `renderer/ reaches the main process only through the typed preload API (${LAYERS}).`,
        },
      ],
      [{ name: 'electron', message: `The page never imports Electron: use window.crisp (${LAYERS}).` }],
    ),
  },
);
