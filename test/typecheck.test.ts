// The type check `npm test` gates on, as a test file: it runs beside the other files instead of
// before them all, and its result is reported with theirs.
import { describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { run } from './helpers/run.js';

const ROOT = join(__dirname, '..');

describe('types', () => {
  it('the whole project type-checks (tsc --noEmit -p .)', async () => {
    const tsc = join(ROOT, 'node_modules', '.bin', 'tsc');
    const r = await run(tsc, ['--noEmit', '-p', '.'], { cwd: ROOT });
    expect(r.error, 'tsc could not be started: run npm ci').toBeUndefined();
    expect(`${r.stdout}${r.stderr}`.trim(), 'tsc found type errors').toBe('');
    expect(r.status).toBe(0);
  });
});
