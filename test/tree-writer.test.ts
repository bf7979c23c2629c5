// TreeWriter: a write that fails reaches flush() (and the next write) as an error naming the path,
// never as an unhandled rejection; the render that used it leaves no staging directory behind.
import { expect, it } from 'vitest';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TreeWriter } from '../build/render/tree-writer.js';

it('rejects flush() with the first failed write, naming its path', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'isoatlas-tree-writer-'));
  try {
    // A file where the writer needs a directory: the write fails with ENOTDIR.
    writeFileSync(join(dir, 'api'), 'not a directory');
    const w = new TreeWriter(dir);
    await w.json('release.json', { ok: true });
    await w.json('api/v1/genes/X.json', { x: 1 });
    await expect(w.flush()).rejects.toThrow(/cannot write api\/v1\/genes\/X\.json into .*: ENOTDIR/);
    await expect(w.json('api/v1/genes/Y.json', {})).rejects.toThrow(/cannot write api\/v1\/genes\/X\.json/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

it('writes every file and lists it with its sha256', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'isoatlas-tree-writer-'));
  try {
    const w = new TreeWriter(dir, 2);
    for (let i = 0; i < 10; i++) await w.json(`a/${i}.json`, { i });
    await w.flush();
    expect(readdirSync(join(dir, 'a')).sort()).toEqual([...Array(10).keys()].map((i) => `${i}.json`).sort());
    expect(w.entries.map((e) => e.sha256)).toHaveLength(10);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
