// Global setup: a fresh log directory for this run (runs of the last day are kept for reading), and at
// teardown the key scan over everything written to it. A throw here fails the run.
import { existsSync, mkdirSync, readdirSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { scanForKeys } from './key-scan.js';

const LOGS = join(__dirname, '..', '..', '.isoatlas', 'test-logs');
/** Runs older than this are removed; by age, not by count, so runs going on at once keep theirs. */
const KEEP_MS = 24 * 3600_000;

export default function setup() {
  mkdirSync(LOGS, { recursive: true });
  for (const d of readdirSync(LOGS).filter((d) => d.startsWith('run-'))) {
    if (Date.now() - (statSync(join(LOGS, d), { throwIfNoEntry: false })?.mtimeMs ?? Date.now()) > KEEP_MS)
      rmSync(join(LOGS, d), { recursive: true, force: true });
  }
  const dir = join(LOGS, `run-${new Date().toISOString().replace(/[:.]/g, '-')}-${process.pid}`);
  mkdirSync(dir);
  // Inherited by the test workers and the servers they spawn.
  process.env.ISOATLAS_TEST_LOG_DIR = dir;

  return () => {
    if (!existsSync(dir)) throw new Error(`the test run's logs at ${dir} were removed before the key scan`);
    const findings = scanForKeys(dir);
    if (findings.length) {
      const where = findings
        .slice(0, 10)
        .map((f) => `${f.file}:${f.line} (key id ${f.id})`)
        .join(', ');
      throw new Error(
        `key material in the test run's output: ${findings.length} occurrence(s) at ${where}; see ${dir}`,
      );
    }
  };
}
