import { defineConfig } from 'vitest/config';

/** Files of the quick tier (`npm run test:unit`): no AWS emulators, no fuzzing, no long-running
 * servers. `npm test` runs every file. */
const QUICK_EXCLUDED = [
  'test/access-contract.test.ts',
  'test/bad-input.test.ts',
  'test/fuzz.test.ts',
  'test/infra.test.ts',
  'test/mirror.test.ts',
  'test/publish.test.ts',
  'test/serve-reload.test.ts',
  'test/server-limits.test.ts',
  'test/server-memory.test.ts',
];

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    exclude: process.env.ISOATLAS_TEST_TIER === 'quick' ? QUICK_EXCLUDED : [],
    // The CLI is compiled and the fixture release built once for the whole run (real chr22 data) and
    // shared read-only. key-scan-setup fails the run if a server log or a test's console output
    // holds key material.
    globalSetup: ['test/helpers/global-setup.ts', 'test/helpers/key-scan-setup.ts'],
    reporters: ['default', './test/helpers/key-scan-reporter.ts', './test/helpers/progress-reporter.ts'],
    // Generous: CI machines are shared, and a test's own assertions bound what it measures.
    testTimeout: 300_000,
    hookTimeout: 300_000,
    teardownTimeout: 60_000,
    // Test files in processes of their own (they start servers and children, and change
    // process-wide state such as console.error), two at a time: the machines this runs on have two
    // cores, and most files spend much of their time waiting on the servers they start.
    pool: 'forks',
    maxWorkers: 2,
  },
});
