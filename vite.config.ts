/**
 * Builds the renderer (React) into out/renderer. Relative asset paths (`base: './'`) let the same
 * build load from Electron's app:// protocol and from `crisp ui`'s HTTP server.
 * The main process and preload are built by electron/build.ts (their own targets and formats).
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';

// Absolute paths: the e2e tests build from other working directories and into temporary folders.
const here = path.dirname(fileURLToPath(import.meta.url));

export default defineConfig({
  root: path.join(here, 'renderer'),
  base: './',
  plugins: [react()],
  build: {
    outDir: path.join(here, 'out/renderer'),
    emptyOutDir: true,
    target: 'chrome120',
    sourcemap: false,
    // No inline <script> or data: module preload: the CSP allows only 'self' scripts.
    modulePreload: { polyfill: false },
    assetsInlineLimit: 0,
  },
});
