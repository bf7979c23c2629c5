// TreeWriter: files written in batches through a worker thread (file-batches.ts) land byte for byte
// as recorded; a write that fails reaches flush() (and the next write) as an error naming the path,
// never as an unhandled rejection; the worker keeps the process alive while it writes and never once
// it is idle; a render that fails with files being written leaves nothing behind.
import { expect, inject, it } from 'vitest';
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFileSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import Database from 'better-sqlite3';
import { TreeWriter } from '../build/render/tree-writer.js';
import { renderTree } from '../build/render/index.js';
import { WAIT_BOUND_MS } from './helpers/wait.js';

const REPO = resolve(__dirname, '..');
const tempDir = () => mkdtempSync(join(inject('runDir'), 'tree-writer-'));
const sha256 = (data: Buffer) => createHash('sha256').update(data).digest('hex');

it('rejects flush() with the first failed write, naming its path', async () => {
  const dir = tempDir();
  try {
    // A file where the writer needs a directory: the write fails with ENOTDIR.
    writeFileSync(join(dir, 'api'), 'not a directory');
    const w = new TreeWriter(dir);
    await w.json('release.json', { ok: true });
    await w.json('api/v1/genes/X.json', { x: 1 });
    await expect(w.flush()).rejects.toThrow(/cannot write api\/v1\/genes\/X\.json into .*: ENOTDIR/);
    await expect(w.json('api/v1/genes/Y.json', {})).rejects.toThrow(/cannot write api\/v1\/genes\/X\.json/);
    await w.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

it('writes every file as recorded, across batches, files larger than a batch and text of several bytes a character', async () => {
  const dir = tempDir();
  try {
    // Batches of 1 KiB: the files below fill dozens of them, and some are larger than one.
    const w = new TreeWriter(dir, { batchBytes: 1024 });
    const bodies = new Map<string, unknown>();
    for (let i = 0; i < 200; i++) {
      // ASCII, two-, three- and four-byte UTF-8 (a surrogate pair in JavaScript), and every 37th
      // file several KiB: a batch must make room for what a string takes in bytes, not characters.
      const text = ['plain', 'é', '€', '𝄞'][i % 4].repeat(i % 37 === 0 ? 3000 : 1 + (i % 50));
      const path = `d${i % 7}/f${i}.json`;
      bodies.set(path, { i, text });
      await w.json(path, bodies.get(path));
    }
    const mmcif = Buffer.alloc(5000, 'ATOM  ');
    await w.bytesAt('structures/x.cif', mmcif);
    await w.flush();
    await w.close();
    expect(w.entries).toHaveLength(201);
    for (const e of w.entries) {
      const data = readFileSync(join(dir, e.path));
      expect({ path: e.path, size: data.length, sha256: sha256(data) }).toEqual({
        path: e.path,
        size: e.size,
        sha256: e.sha256,
      });
      expect(data.equals(e.path.endsWith('.cif') ? mmcif : Buffer.from(JSON.stringify(bodies.get(e.path))))).toBe(true);
    }
    expect(readdirSync(dir).sort()).toEqual(['d0', 'd1', 'd2', 'd3', 'd4', 'd5', 'd6', 'structures']);
    expect(w.files).toBe(201);
    expect(w.bytes).toBe(w.entries.reduce((n, e) => n + e.size, 0));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

/** Runs `script` (TypeScript, importing the writer) in a process of its own; resolves with how it
 * ended. A process that does not end by itself is killed at the wait bound. */
function runScript(script: string): Promise<{ code: number | string | null; stdout: string; stderr: string }> {
  const file = join(tempDir(), 'script.mts');
  writeFileSync(file, script);
  return new Promise((done) => {
    execFile(join(REPO, 'node_modules/.bin/tsx'), [file], { timeout: WAIT_BOUND_MS }, (err, stdout, stderr) =>
      done({
        code: err ? ((err as NodeJS.ErrnoException).code ?? (err as { signal?: string }).signal ?? 1) : 0,
        stdout,
        stderr,
      }),
    );
  });
}

it('keeps the process alive while batches are being written, and lets it end once they are', async () => {
  const dir = tempDir();
  try {
    // The script writes a first lot and waits for it (the worker is then idle), then starts a flush
    // of a second lot and does not wait for it, nor close the writer: the batches under way must
    // still land, and the idle worker must not keep the process from ending.
    const { code, stderr } = await runScript(`
      import { TreeWriter } from ${JSON.stringify(join(REPO, 'build/render/tree-writer.ts'))};
      const w = new TreeWriter(${JSON.stringify(dir)}, { batchBytes: 256 });
      const write = async (from: number) => {
        for (let i = from; i < from + 250; i++) await w.json('f' + i + '.json', { i, pad: 'x'.repeat(100) });
      };
      await write(0);
      await w.flush();
      await write(250);
      void w.flush();
    `);
    expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
    expect(readdirSync(dir).filter((f) => f.endsWith('.json'))).toHaveLength(500);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

it('leaves nothing behind when a render fails with files being written', async () => {
  const dir = tempDir();
  try {
    // The last gene in id order gets an id that cannot be a file name: the render fails there, after
    // the files of every other gene went to the writer.
    const db = join(dir, 'release.sqlite');
    copyFileSync(inject('fixtureDb'), db);
    const conn = new Database(db);
    conn.pragma('foreign_keys = OFF');
    const last = conn.prepare('SELECT max(gene_id) FROM genes').pluck().get() as string;
    for (const table of ['genes', 'gene_info', 'isoforms'])
      conn.prepare(`UPDATE ${table} SET gene_id = 'zz not safe' WHERE gene_id = ?`).run(last);
    conn.close();
    await expect(renderTree(db, join(dir, 'tree'), { progress: false })).rejects.toThrow(
      'identifier "zz not safe" cannot be a file name in the tree',
    );
    expect(readdirSync(dir)).toEqual(['release.sqlite']);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
