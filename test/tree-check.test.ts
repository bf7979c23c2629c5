// Publish's check of a tree (build/publish/tree-check.ts), on its own: the bodies it verified are what the
// upload sends, and beyond its memory budget the upload reads and hashes again, so a file changed
// between the check and its upload is refused (exit 3) rather than uploaded. The whole publish,
// against S3, is in publish.test.ts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { checkTree, startSizeCheck, type TreeObject } from '../build/publish/tree-check.js';
import { BadInputError } from '../build/common/errors.js';

let dir: string;
const files: Record<string, string> = { 'api/v1/a.json': '{"a":1}', 'api/v1/b.json': '{"b":22}' };
const objects: TreeObject[] = Object.entries(files).map(([path, body]) => ({
  path,
  size: body.length,
  sha256: createHash('sha256').update(body).digest('hex'),
}));
/** Items as publish's ledger hands them over: a page (here of one) at a time. */
const paged = <T>(items: readonly T[]) => ({ count: items.length, pages: () => items.map((item) => [item]) });
const treeFiles = paged(objects);
const upload = paged(objects);

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'isoatlas-tree-check-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function writeTree(name: string): string {
  const root = join(dir, name);
  mkdirSync(join(root, 'api/v1'), { recursive: true });
  for (const [path, body] of Object.entries(files)) writeFileSync(join(root, path), body);
  return root;
}

describe('checkTree', () => {
  it('hands the upload the bytes it verified, within its budget, even if the file changes after', async () => {
    const root = writeTree('kept');
    const tree = await checkTree({
      dir: root,
      files: treeFiles,
      upload,
      where: 's3://test/',
      progress: false,
    });
    writeFileSync(join(root, objects[0].path), '{"a":9}');
    expect((await tree.body(objects[0])).toString()).toBe(files[objects[0].path]);
  });

  it('beyond its budget the upload reads again and refuses a file changed since the check', async () => {
    const root = writeTree('reread');
    const tree = await checkTree({
      dir: root,
      files: treeFiles,
      upload,
      where: 's3://test/',
      progress: false,
      keepBytes: 0,
    });
    writeFileSync(join(root, objects[0].path), '{"a":9}');
    const err = await tree.body(objects[0]).catch((e: Error) => e);
    expect(err).toBeInstanceOf(BadInputError);
    expect((err as Error).message).toContain(`${join(root, objects[0].path)} changed while publishing`);
    expect((err as Error).message).toContain('The release stays pending in s3://test/');
    expect((await tree.body(objects[1])).toString()).toBe(files[objects[1].path]);
  });

  it('names every problem up to five, counts the rest, and ignores files the manifest does not list', async () => {
    const root = writeTree('many');
    writeFileSync(join(root, 'api/v1/extra.json'), 'not listed');
    const many = Array.from({ length: 7 }, (_, i) => ({
      path: `api/v1/gone-${i}.json`,
      size: 1,
      sha256: 'f'.repeat(64),
    }));
    const err = await checkTree({
      dir: root,
      files: paged([...objects, ...many]),
      upload,
      where: 's3://test/',
      progress: false,
    }).catch((e: Error) => e);
    expect(err).toBeInstanceOf(BadInputError);
    expect((err as Error).message).toContain(
      `7 files of the tree ${root} do not match its manifest.json: api/v1/gone-0.json (missing), api/v1/gone-1.json (missing)`,
    );
    expect((err as Error).message).toContain('api/v1/gone-4.json (missing) and 2 more.');
    expect((err as Error).message).not.toContain('extra.json');
    // Without the missing files, the extra one is no problem.
    await expect(
      checkTree({ dir: root, files: treeFiles, upload, where: 's3://test/', progress: false }),
    ).resolves.toBeDefined();
  });

  it('checks sizes in its worker: another size, a directory, nothing, a file for a directory or a loop of links at the path; stopped, it ends', async () => {
    const root = writeTree('sizes');
    mkdirSync(join(root, 'api/v1/dir.json'));
    symlinkSync(join(root, 'api/v1/loop.json'), join(root, 'api/v1/loop.json'));
    const listed = [
      ...objects,
      { path: 'api/v1/a.json', size: 99 },
      { path: 'api/v1/dir.json', size: 1 },
      { path: 'api/v1/none.json', size: 1 },
      { path: 'api/v1/a.json/under-a-file.json', size: 1 },
      { path: 'api/v1/loop.json', size: 1 },
    ];
    const sizes = startSizeCheck(root);
    for (const f of listed) sizes.add([f]);
    sizes.end();
    expect([...(await sizes.problems)].sort()).toEqual([
      ['api/v1/a.json', `${files['api/v1/a.json'].length} bytes, the manifest lists 99`],
      ['api/v1/a.json/under-a-file.json', 'missing'],
      ['api/v1/dir.json', 'missing'],
      ['api/v1/loop.json', 'missing'],
      ['api/v1/none.json', 'missing'],
    ]);
    // Stopped before its end (publish failed first): its promise fails instead of hanging.
    const stopped = startSizeCheck(root);
    stopped.add(listed);
    stopped.stop();
    await expect(stopped.problems).rejects.toThrow(/size check/);
  });

  it("takes the tree's own manifest objects from what it holds, not from the files", async () => {
    const root = writeTree('held');
    const body = Buffer.from(files[objects[0].path]);
    rmSync(join(root, objects[0].path));
    const tree = await checkTree({
      dir: root,
      files: paged([objects[1]]),
      upload,
      held: (sha) => (sha === objects[0].sha256 ? body : null),
      where: 's3://test/',
      progress: false,
      keepBytes: 0,
    });
    expect(await tree.body(objects[0])).toBe(body);
  });
});
