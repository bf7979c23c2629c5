// Compiles the CLI, then builds the fixture release (a few dozen genes of the demo, chosen for the
// shapes their records take: test/helpers/fixture-release.ts) once per test run, into a temporary
// directory, through the same pipeline as `isoatlas demo`; test files read it via
// inject('fixtureDb') / inject('fixtureTree') and never change it. inject('runDir') is the run's
// own scratch directory (the whole demo, when a file asks for it: demo-release.ts; every test's
// temporary directories), removed at the end.
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { buildFixtureRelease } from './fixture-release.js';

declare module 'vitest' {
  export interface ProvidedContext {
    fixtureDb: string;
    fixtureTree: string;
    fixtureWork: string;
    runDir: string;
  }
}

export default async function setup(project: TestProject) {
  // Tests run the command as users do (bin/isoatlas.mjs → dist/): compile it from these sources.
  execFileSync(process.execPath, [join(__dirname, '../../bin/compile.mjs')], { stdio: 'inherit' });
  const run = mkdtempSync(join(tmpdir(), 'isoatlas-test-run-'));
  // Every temporary directory of the run's test files and the processes they start (os.tmpdir()
  // reads TMPDIR) is made in the run's own, so what a test leaves, failed or not, goes with the run.
  const scratch = join(run, 'tmp');
  mkdirSync(scratch);
  process.env.TMPDIR = scratch;
  const work = join(run, 'fixture');
  mkdirSync(work);
  const { db, tree } = await buildFixtureRelease(work);
  project.provide('fixtureDb', db);
  project.provide('fixtureTree', tree);
  project.provide('fixtureWork', work);
  project.provide('runDir', run);
  return () => rmSync(run, { recursive: true, force: true });
}
