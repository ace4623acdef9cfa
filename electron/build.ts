/**
 * Builds the Electron main process, the engine worker and the preload into out/electron:
 *   main.js, engineWorker.js  ESM for Node (dependencies stay external: native modules cannot be bundled)
 *   preload.cjs               one self-contained CommonJS file (sandboxed preloads cannot import)
 * Run: node --import tsx electron/build.ts   (npm run build:electron)
 */
import { builtinModules } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'vite';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const outDir = path.join(root, 'out/electron');
const nodeBuiltins = [...builtinModules, ...builtinModules.map((m) => `node:${m}`)];

export async function buildElectron(): Promise<void> {
  await build({
    configFile: false,
    root,
    logLevel: 'warn',
    build: {
      ssr: true,
      target: 'node22',
      outDir,
      emptyOutDir: true,
      minify: false,
      sourcemap: true,
      rollupOptions: {
        input: {
          main: path.join(root, 'electron/main/main.ts'),
          engineWorker: path.join(root, 'app/worker/engineWorker.ts'),
          coreWorker: path.join(root, 'engine/core/coreWorker.ts'),
        },
        external: ['electron', ...nodeBuiltins],
        output: { format: 'es', entryFileNames: '[name].js', chunkFileNames: 'chunks/[name]-[hash].js' },
      },
    },
  });
  await build({
    configFile: false,
    root,
    logLevel: 'warn',
    build: {
      target: 'chrome120',
      outDir,
      emptyOutDir: false,
      minify: false,
      lib: { entry: path.join(root, 'electron/preload/preload.ts'), formats: ['cjs'], fileName: () => 'preload.cjs' },
      rollupOptions: { external: ['electron'] },
    },
  });
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  await buildElectron();
  process.stdout.write(`built ${path.relative(root, outDir)}/{main.js,engineWorker.js,preload.cjs}\n`);
}
