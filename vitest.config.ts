import { readFileSync } from 'node:fs';
import fg from 'fast-glob';
import { defineConfig } from 'vitest/config';

/** What keeps a test file out of the quick tier (`npm run test:unit`): it starts `isoatlas serve`,
 * s3rver, nginx, dynalite or a browser, fuzzes, synthesizes the CDK stack, or reads the whole demo.
 * Read from each file's imports, so a new file is placed by what it uses. `npm test` runs every file. */
const OUTSIDE_QUICK_TIER = [
  /from '\.\/helpers\/(server|s3rver|nginx-front|contract-suite|demo-release)\.js'/,
  /from 'fast-check'/,
  /from 'dynalite'/,
  /from 'playwright-core'/,
  /from '\.\.\/infra\/stack\.js'/,
];
/** Files that use none of that but are slow on purpose (many command runs over damaged inputs). */
const SLOW = ['test/bad-input.test.ts'];

function quickTierExcluded(): string[] {
  return fg
    .sync('test/**/*.test.ts')
    .filter((file) => SLOW.includes(file) || OUTSIDE_QUICK_TIER.some((re) => re.test(readFileSync(file, 'utf8'))));
}

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    exclude: process.env.ISOATLAS_TEST_TIER === 'quick' ? quickTierExcluded() : [],
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
    // process-wide state such as console.error), four at a time on the two cores the machines this
    // runs on have: most files spend much of their time waiting on the servers and commands they
    // start, and the others fill those waits. On a machine busy with other work, where each
    // runnable process gets a like share of the cores, it also keeps the suite's share from
    // shrinking. Measured against two and three at a time: BENCHMARKS.md, "Tests".
    pool: 'forks',
    maxWorkers: 4,
  },
});
