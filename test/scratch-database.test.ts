// build/common/scratch-database.ts: a run's scratch directory is its own, and a later run removes
// those of killed runs of the same kind, never one whose process still runs.
import { describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openScratchDatabase } from '../build/common/scratch-database.js';

describe('scratch databases', () => {
  it('removes the scratch of a killed run of the same kind, and leaves a running one, another kind and its own', () => {
    const gone = spawnSync(process.execPath, ['-e', '0']).pid!;
    const dead = join(tmpdir(), `isoatlas-publish-${gone}-a1B2c3`);
    const running = join(tmpdir(), `isoatlas-publish-${process.ppid}-d4E5f6`);
    const otherKind = join(tmpdir(), `isoatlas-gc-${gone}-g7H8i9`);
    for (const dir of [dead, running, otherKind]) {
      mkdirSync(dir, { recursive: true });
      writeFileSync(join(dir, 'ledger.sqlite'), 'left behind');
    }
    const scratch = openScratchDatabase('publish');
    try {
      expect([existsSync(dead), existsSync(running), existsSync(otherKind)]).toEqual([false, true, true]);
      scratch.db.exec('CREATE TABLE t (x)');
    } finally {
      scratch.remove();
      for (const dir of [running, otherKind]) rmSync(dir, { recursive: true, force: true });
    }
  });
});
