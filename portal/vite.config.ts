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
    // The main chunk is the app, lit-html and openapi-fetch; CodeMirror
    // (src/ui/lazyEditor.ts) and each language package (src/ui/languages.ts)
    // are chunks loaded on demand.
    chunkSizeWarningLimit: 500,
    rollupOptions: {
      output: {
        // Name lazy chunks after what they hold ("lang-go-<hash>.js", not "dist-<hash>.js").
        chunkFileNames: (chunk) => {
          const ids = [chunk.facadeModuleId ?? '', ...chunk.moduleIds].join('\n');
          const name =
            /@codemirror\/(lang-[a-z]+)\//.exec(ids)?.[1] ??
            (ids.includes('@codemirror/view/') ? 'codemirror' : /@lezer\/([a-z]+)\//.exec(ids)?.[1]);
          return `assets/${name ?? '[name]'}-[hash].js`;
        },
      },
    },
  },
  test: {
    include: ['src/**/*.test.ts'],
    environment: 'node',
  },
});
