import { defineConfig } from 'vite';

// Served by the broker under /console/ (services/broker/src/routes/console.ts); relative asset
// URLs would also work, but an absolute base keeps deep hash links simple.
export default defineConfig({
  base: '/console/',
  build: { outDir: 'dist', emptyOutDir: true, target: 'es2022', chunkSizeWarningLimit: 400 },
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
});
