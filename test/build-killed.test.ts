// A build killed half-way (SIGKILL: nothing of it runs after) leaves its staging tree and scratch
// databases beside --out; the next build of the same output removes them and says so, and leaves alone
// what only looks like them: a live process's, a file where a directory would be, another output's.
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { treePaths } from '../edge/contract/tree.js';
import { runCli } from './helpers/run.js';

const CLI = join(__dirname, '../bin/isoatlas.mjs');
const work = mkdtempSync(join(tmpdir(), 'isoatlas-killed-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

/** Polls `check` until it holds (a build's files appear at its own pace). */
async function until(check: () => boolean, what: string, ms = 120_000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('a killed build', () => {
  it('leaves files that the next build of the same output removes, and nothing else', async () => {
    const out = join(work, 'tree');
    const child = spawn(process.execPath, [CLI, 'build', '--db', inject('fixtureDb'), '--out', out], {
      stdio: 'ignore',
    });
    const pid = child.pid!;
    const staging = `${out}.partial-${pid}`;
    // Killed once it has written files into its staging tree.
    await until(() => existsSync(join(staging, 'api')) && readdirSync(join(staging, 'api')).length > 0, 'files');
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await exited;
    const left = readdirSync(work).filter((n) => n.includes(`-${pid}`));
    expect(left).toEqual(
      expect.arrayContaining([`tree.partial-${pid}`, `tree.manifest-${pid}.sqlite`, `tree.tables-${pid}.sqlite`]),
    );
    expect(existsSync(out)).toBe(false);
    // Look-alikes that are not a dead build's of this output.
    const alike = [
      `tree.partial-${process.pid}`, // a running process's
      'tree.partial-4194999', // a file where the staging directory would be
      'other.partial-4194998', // another output's
      `tree.tables-${pid}.sqlite.bak`, // not a name a build works under
    ];
    mkdirSync(join(work, alike[0]));
    for (const name of alike.slice(1)) writeFileSync(join(work, name), 'not a build');

    const again = await runCli(['build', '--db', inject('fixtureDb'), '--out', out]);
    expect(again.status, again.stderr).toBe(0);
    expect(again.stderr + again.stdout).toContain(`removed what 1 killed build(s) of it left (process ${pid})`);
    expect(existsSync(join(out, treePaths.manifest))).toBe(true);
    expect(readdirSync(work).sort()).toEqual(['tree', ...alike].sort());
  });
});
