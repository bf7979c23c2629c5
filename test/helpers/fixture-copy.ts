// A copy of the fixture release database in a temporary directory of the suite's own, for tests that
// change a release (imports through the CLI, replacing or removing tracks) without touching the
// shared fixture release. Registers its own setup and clean-up.
import { afterAll, beforeAll, inject } from 'vitest';
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export function fixtureReleaseCopy(name: string): { dir: () => string; db: () => string } {
  let dir = '';
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), `isoatlas-${name}-`));
    copyFileSync(inject('fixtureDb'), join(dir, 'release.sqlite'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  return { dir: () => dir, db: () => join(dir, 'release.sqlite') };
}
