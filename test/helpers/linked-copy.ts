// A copy of a directory whose files are hard links to the original's: making it costs little more
// than making its directories, where copying a release tree's thousands of files byte by byte costs
// seconds. For tests that change a file or two of the shared, read-only fixture: change a file with
// replaceFile (a new file in its place), never by writing into it, which would change the original too.
import { copyFileSync, cpSync, linkSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export function linkedCopy(from: string, to: string): void {
  mkdirSync(to, { recursive: true });
  for (const entry of readdirSync(from, { withFileTypes: true })) {
    const source = join(from, entry.name);
    const target = join(to, entry.name);
    if (entry.isDirectory()) linkedCopy(source, target);
    else if (entry.isFile()) link(source, target);
    else cpSync(source, target); // a symbolic link or other special file, as cpSync copies it
  }
}

function link(source: string, target: string): void {
  try {
    linkSync(source, target);
  } catch (err) {
    // Another file system, or one without hard links: a copy does the same.
    if ((err as NodeJS.ErrnoException).code !== 'EXDEV' && (err as NodeJS.ErrnoException).code !== 'EPERM') throw err;
    copyFileSync(source, target);
  }
}

/** Gives `path` new contents in a file of its own: the linked original keeps its own. */
export function replaceFile(path: string, data: string | Uint8Array): void {
  rmSync(path);
  writeFileSync(path, data);
}
