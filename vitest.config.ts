import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // The demo release is built once for the whole run (real chr22 data, ~15 s) and shared read-only.
    // key-scan-setup fails the run if a server log or a test's console output holds key material.
    globalSetup: ['test/helpers/global-setup.ts', 'test/helpers/key-scan-setup.ts'],
    reporters: ['default', './test/helpers/key-scan-reporter.ts'],
    testTimeout: 120_000,
    hookTimeout: 180_000,
    pool: 'forks',
  },
});
