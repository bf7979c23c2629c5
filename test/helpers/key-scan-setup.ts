// Global setup: a fresh log directory for this run (the last few runs are kept for reading), and at
// teardown the key scan over everything written to it. A throw here fails the run.
import { mkdirSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { scanForKeys } from './key-scan.js';

const LOGS = join(__dirname, '..', '..', '.isoatlas', 'test-logs');
const KEEP_RUNS = 3;

export default function setup() {
  mkdirSync(LOGS, { recursive: true });
  const old = readdirSync(LOGS).filter((d) => d.startsWith('run-')).sort();
  for (const d of old.slice(0, Math.max(0, old.length - (KEEP_RUNS - 1)))) rmSync(join(LOGS, d), { recursive: true, force: true });
  const dir = join(LOGS, `run-${new Date().toISOString().replace(/[:.]/g, '-')}-${process.pid}`);
  mkdirSync(dir);
  // Inherited by the test workers and the servers they spawn.
  process.env.ISOATLAS_TEST_LOG_DIR = dir;

  return () => {
    const findings = scanForKeys(dir);
    if (findings.length) {
      const where = findings.slice(0, 10).map((f) => `${f.file}:${f.line} (key id ${f.id})`).join(', ');
      throw new Error(`key material in the test run's output: ${findings.length} occurrence(s) at ${where}; see ${dir}`);
    }
  };
}
