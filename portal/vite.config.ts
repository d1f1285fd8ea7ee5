// Vite builds the portal into dist/ (deploy/scripts/build-portal.sh copies it
// into gateway/internal/portal/dist, which the gateway embeds and serves at /).
// Vitest runs the pure state modules' unit tests; e2e/ is a separate runner.
import { defineConfig } from 'vitest/config';

export default defineConfig({
  base: '/',
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    sourcemap: false,
    chunkSizeWarningLimit: 2000,
  },
  test: {
    include: ['src/**/*.test.ts'],
    environment: 'node',
  },
});
