// Compiles the CLI, then builds the demo release once per test run, into a temporary directory, through the same pipeline
// as `isoatlas demo`; test files read it via inject('demoDb') / inject('demoTree').
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { buildDemo } from '../../build/demo.js';

declare module 'vitest' {
  export interface ProvidedContext {
    demoDb: string;
    demoTree: string;
    demoWork: string;
  }
}

export default async function setup(project: TestProject) {
  // Tests run the command as users do (bin/isoatlas.mjs → dist/): compile it from these sources.
  execFileSync(process.execPath, [join(__dirname, '../../bin/compile.mjs')], { stdio: 'inherit' });
  const work = mkdtempSync(join(tmpdir(), 'isoatlas-test-demo-'));
  const { db, tree } = await buildDemo(work, { progress: false });
  project.provide('demoDb', db);
  project.provide('demoTree', tree);
  project.provide('demoWork', work);
  return () => rmSync(work, { recursive: true, force: true });
}
