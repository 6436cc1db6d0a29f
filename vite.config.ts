import { defineConfig } from 'vitest/config';
import { svelte } from '@sveltejs/vite-plugin-svelte';

// One config for the app (vite) and the tests (vitest).
// Test suites: test/unit (Node, cpu/wasm), test/webgpu (Node + Dawn on SwiftShader),
// test/e2e (built site in Debian's chromium via playwright-core). The last two skip loudly
// when chromium (which ships the SwiftShader Vulkan driver) is missing.
export default defineConfig({
  plugins: [svelte()],
  server: { host: '127.0.0.1' },
  preview: { host: '127.0.0.1' },
  worker: { format: 'es' },
  build: { target: 'es2022' },
  test: {
    include: ['test/**/*.test.ts'],
    environment: 'node',
    pool: 'forks',
    testTimeout: 120_000,
    hookTimeout: 300_000,
    reporters: ['default'],
  },
});
