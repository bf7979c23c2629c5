// The whole demo release (every gene of the real chr22 data), for the few checks whose point is the
// whole data set or the demo's scale: every input record imported, every record against its input,
// search quality over every symbol, sharded tables of many shards, the README's examples. Built at
// most once per run, by the first test file that asks, with `isoatlas demo` in a child process (a
// worker's event loop stays free); files asking meanwhile wait for it. Read-only: tests that change a
// release copy it first. Servers, publishes and mirrors use the fixture release instead.
import { inject } from 'vitest';
import { existsSync, mkdirSync, readFileSync, renameSync, watch, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runCli } from './run.js';

export interface DemoRelease {
  db: string;
  tree: string;
}

const BUILT = 'built.json';
const FAILED = 'failed.txt';

function outcome(dir: string): DemoRelease | Error | null {
  if (existsSync(join(dir, BUILT))) return JSON.parse(readFileSync(join(dir, BUILT), 'utf8')) as DemoRelease;
  if (existsSync(join(dir, FAILED)))
    return new Error(`the demo release of this run failed to build:\n${readFileSync(join(dir, FAILED), 'utf8')}`);
  return null;
}

/** Resolves when another file's build of the demo ends, on the directory's own events. */
function awaitOutcome(dir: string): Promise<DemoRelease> {
  return new Promise((resolve, reject) => {
    const settle = () => {
      const o = outcome(dir);
      if (o === null) return;
      watcher.close();
      if (o instanceof Error) reject(o);
      else resolve(o);
    };
    const watcher = watch(dir, settle);
    settle(); // it may have ended before the watch began
  });
}

function writeAtomically(path: string, text: string): void {
  writeFileSync(`${path}.part`, text);
  renameSync(`${path}.part`, path);
}

export async function demoRelease(): Promise<DemoRelease> {
  const dir = join(inject('runDir'), 'demo');
  try {
    mkdirSync(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    return awaitOutcome(dir);
  }
  const work = join(dir, 'work');
  const built = await runCli(['demo', '--work', work], { env: { ...process.env, NO_COLOR: '1' } });
  if (built.status !== 0) {
    const why = `isoatlas demo --work ${work} exited ${built.status ?? built.signal}\n${built.stderr}\n${built.stdout}`;
    writeAtomically(join(dir, FAILED), why);
    throw new Error(why);
  }
  const release: DemoRelease = { db: join(work, 'release.sqlite'), tree: join(work, 'tree') };
  writeAtomically(join(dir, BUILT), JSON.stringify(release));
  return release;
}
