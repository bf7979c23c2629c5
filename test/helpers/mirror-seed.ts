// A mirror directory that starts out holding a release's objects as hard links to the files of the
// trees that hold them, for tests whose point comes after a mirror holds a release: a sync of it
// hashes what it holds instead of downloading it (a mirror in a fraction of the time, and files that
// are cheap to remove). A directory holding only objects/ is one `isoatlas mirror` writes into.
// Whoever uses it:
//   - never writes into a linked object (that would write into the tree, e.g. the shared fixture
//     release): leave the object out of the links, so the sync downloads a file of its own, or
//     replace the file (remove, then write);
//   - over a tree other test files use too (the fixture release), asserts nothing about what a
//     later sync hashes or trusts: they link and unlink its files at any time, which changes their
//     ctime, and the mirror's verified index hashes again an object whose ctime changed. A tree of
//     the test file's own is linked only by its own tests, one at a time.
import { existsSync, linkSync, mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { objectKey } from '../../edge/contract/store-layout.js';

/** Links each file as the object named by its sha256 (once per sha256), from the first of `trees`
 * holding its path, leaving out the objects `except` names. Returns how many objects it linked. */
export function linkObjects(
  dir: string,
  trees: readonly string[],
  files: Iterable<{ sha256: string; path: string }>,
  except: ReadonlySet<string> = new Set(),
): number {
  const done = new Set(except);
  const folders = new Set<string>();
  for (const f of files) {
    if (done.has(f.sha256)) continue;
    done.add(f.sha256);
    const tree = trees.find((t) => existsSync(join(t, f.path)));
    if (!tree) throw new Error(`${f.path} is in none of ${trees.join(', ')}`);
    const to = join(dir, objectKey(f.sha256));
    if (!folders.has(dirname(to))) mkdirSync(dirname(to), { recursive: true });
    folders.add(dirname(to));
    linkSync(join(tree, f.path), to);
  }
  return done.size - except.size;
}
