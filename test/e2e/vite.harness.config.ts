// Test-only vite build: test/e2e/harness.html (+ checks) into test-results/harness-dist/.
// Not part of the shipped site (vite.config.ts builds index.html into dist/).
// Run: npx vite build --config test/e2e/vite.harness.config.ts  (test/helpers/browser.ts does).

import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

const here = fileURLToPath(new URL('.', import.meta.url));
const repoRoot = fileURLToPath(new URL('../..', import.meta.url));

export default defineConfig({
  root: here,
  base: './',
  publicDir: false,
  worker: { format: 'es' },
  build: {
    target: 'es2022',
    outDir: `${repoRoot}test-results/harness-dist`,
    emptyOutDir: true,
    rolldownOptions: { input: `${here}harness.html` },
  },
});
