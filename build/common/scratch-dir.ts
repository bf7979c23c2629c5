// A scratch directory for one run of a command that must not hold a whole release in memory (gc's
// sweep ledger, publish's ledger). It lives under the system's temporary directory, made for the
// run, so removing it can only remove what the run made; the directories of runs of the same kind
// whose process is gone (killed before they could remove their own) are removed first.
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { processAlive } from './live-process.js';

/** A new directory named `isoatlas-<name>-<pid>-…`. */
export function openScratchDir(name: string): string {
  removeKilledRuns(name);
  return mkdtempSync(join(tmpdir(), `isoatlas-${name}-${process.pid}-`));
}

/** Scratch directories of this kind left by runs whose process no longer runs. */
function removeKilledRuns(name: string): void {
  const pattern = new RegExp(`^isoatlas-${name}-([0-9]+)-[A-Za-z0-9]{6}$`);
  let names: string[];
  try {
    names = readdirSync(tmpdir());
  } catch {
    return;
  }
  for (const entry of names) {
    const m = pattern.exec(entry);
    if (m && Number(m[1]) !== process.pid && !processAlive(Number(m[1])))
      rmSync(join(tmpdir(), entry), { recursive: true, force: true });
  }
}
