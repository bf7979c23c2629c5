import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // The demo release is built once for the whole run (real chr22 data, ~15 s) and shared read-only.
    globalSetup: ['test/helpers/global-setup.ts'],
    testTimeout: 120_000,
    hookTimeout: 180_000,
    pool: 'forks',
  },
});
