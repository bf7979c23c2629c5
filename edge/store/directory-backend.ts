// A store's backend in a local directory (a mirror's store, served by `isoatlas serve --dir`): a key
// is a file below the root. Every write goes to a scratch file beside its target first and is then
// moved under its name, so a reader sees the old value or the new one, never part of one.
//
// Conditional writes, as real as S3's (backend.ts), from two guarantees POSIX file systems give:
//   - If-None-Match: the scratch file is hard-linked under the key's name; link(2) fails with EEXIST
//     when the name exists, atomically, so of two creators exactly one wins.
//   - If-Match: the writer takes the key's lock, a `<key>.lock` file created with O_CREAT|O_EXCL
//     (open 'wx', which fails when it exists), compares the stored value's tag with the one it read,
//     renames its scratch file over the key and removes the lock. A writer that finds the lock taken
//     is refused like S3's 409 and tries again. A lock older than STALE_LOCK_MS was left by a writer
//     that died (a write holds it for milliseconds) and is broken.
// A key's tag is the sha256 of its bytes, so equal tags mean equal values. A key written with
// conditions must always be (a plain write does not take the lock); the store (release-store.ts)
// writes its pointer, history and edge record only so.
import { createHash, randomBytes } from 'node:crypto';
import { link, mkdir, open, readFile, readdir, rename, rm, stat, unlink } from 'node:fs/promises';
import { type Dirent, closeSync, fstatSync, openSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { OriginError } from '../origin.js';
import {
  ConditionFailed,
  StorageError,
  type ListedObject,
  type StoreBackend,
  type StoredObject,
  type WriteOptions,
} from './backend.js';

/** Longer than any write holds a lock, by far: a lock this old belongs to a writer that died. */
export const STALE_LOCK_MS = 30_000;

/** Scratch files and locks are never keys: lists skip them. */
const SCRATCH = /\.tmp-[0-9]+-[0-9a-f]+$|\.lock(\.broken-[0-9]+-[0-9a-f]+)?$/;

/** A file gone meanwhile (removed by another writer) is no error here. */
const statOrNull = (file: string) => stat(file).catch(() => null);

const sha256Of = (body: Uint8Array) => createHash('sha256').update(body).digest('hex');

/** Files up to this size are read without the thread pool (see readSmall). */
export const READ_NOW_BYTES = 256 * 1024;

/** The file's bytes when it is small, read synchronously; null when it is larger. A pack streams
 * thousands of small objects, many answers at once: an async read costs each several thread-pool
 * round trips (open, stat, read, close), far more than reading it, and the pool's few threads are
 * shared by every answer. A small file read from the page cache blocks less than those round trips
 * cost; a larger one is read asynchronously, as before. Throws as readFile does. */
function readSmall(file: string): Buffer | null {
  const fd = openSync(file, 'r');
  try {
    return fstatSync(fd).size <= READ_NOW_BYTES ? readFileSync(fd) : null;
  } finally {
    closeSync(fd);
  }
}

export class DirectoryBackend implements StoreBackend {
  readonly root: string;
  readonly where: string;
  readonly description: string;
  readonly noun = 'directory';
  /** Folders known to exist: a mirror writes thousands of objects into 256 of them. */
  private readonly folders = new Set<string>();

  constructor(root: string) {
    this.root = resolve(root);
    this.where = `${this.root}${sep}`;
    this.description = `dir:${this.root}`;
  }

  /** The file of a key; never outside the root, whatever the key. */
  private file(key: string): string | null {
    const full = resolve(this.root, key);
    return full.startsWith(this.where) && !SCRATCH.test(full) ? full : null;
  }

  async read(key: string): Promise<StoredObject | null> {
    const file = this.file(key);
    if (!file) return null;
    let body: Buffer;
    try {
      body = readSmall(file) ?? (await readFile(file));
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' || code === 'ENOTDIR' || code === 'EISDIR') return null;
      throw new OriginError(
        `cannot read ${key} from ${this.description}: ${code ?? (err as Error).message}`,
        'unavailable',
      );
    }
    let etag: string | undefined;
    // The tag is hashed only when asked for: serving reads objects by the million and never asks.
    return {
      body,
      get etag() {
        return (etag ??= sha256Of(body));
      },
    };
  }

  async size(key: string): Promise<number | null> {
    const file = this.file(key);
    const found = file ? await statOrNull(file) : null;
    return found?.isFile() ? found.size : null;
  }

  /** A key's bytes read at once (several times faster than `read` for small files, and blocking):
   * for a mirror checking thousands of its objects while it does nothing else. Null when the file
   * is missing, unreadable, or not of `size` bytes. */
  readNow(key: string, size?: number): Buffer | null {
    const file = this.file(key);
    try {
      if (!file || (size !== undefined && statSync(file, { throwIfNoEntry: false })?.size !== size)) return null;
      return readFileSync(file);
    } catch {
      return null;
    }
  }

  async write(key: string, body: Uint8Array, o: WriteOptions): Promise<void> {
    const file = this.file(key);
    if (!file) throw new StorageError(`${key} is not a key a store in ${this.where} can hold`);
    const conditional = o.ifNoneMatch || o.ifMatch !== undefined;
    const folder = dirname(file);
    if (!this.folders.has(folder)) {
      await mkdir(folder, { recursive: true }).catch((err) => this.failed('create the folder of', key, err));
      this.folders.add(folder);
    }
    const scratch = await this.scratch(file, body, conditional).catch((err) => this.failed('write', key, err));
    let moved = false;
    try {
      if (o.ifNoneMatch) {
        try {
          await link(scratch, file);
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code === 'EEXIST') throw new ConditionFailed(key, 412);
          this.failed('create', key, err);
        }
      } else if (o.ifMatch !== undefined) {
        await this.underLock(key, file, async () => {
          const now = await this.read(key);
          if (!now || now.etag !== o.ifMatch) throw new ConditionFailed(key, 412);
          await rename(scratch, file).catch((err) => this.failed('replace', key, err));
          moved = true;
        });
      } else {
        await rename(scratch, file).catch((err) => this.failed('write', key, err));
        moved = true;
      }
    } finally {
      // A link leaves the scratch name too; a refused or failed write leaves it alone.
      if (!moved) await rm(scratch, { force: true });
    }
  }

  async list(prefix: string): Promise<ListedObject[]> {
    const start = join(this.root, prefix.slice(0, prefix.lastIndexOf('/') + 1));
    const out: ListedObject[] = [];
    const walk = async (dir: string): Promise<void> => {
      let entries: Dirent[];
      try {
        entries = await readdir(dir, { withFileTypes: true });
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
        throw err;
      }
      for (const e of entries) {
        const full = join(dir, e.name);
        const key = relative(this.root, full).split(sep).join('/');
        if (e.isDirectory()) {
          if (prefix.startsWith(`${key}/`) || key.startsWith(prefix) || `${key}/`.startsWith(prefix)) await walk(full);
        } else if (e.isFile() && key.startsWith(prefix) && !SCRATCH.test(e.name)) {
          const s = await statOrNull(full);
          if (s) out.push({ key, size: s.size, modified: s.mtime });
        }
      }
    };
    await walk(start);
    return out;
  }

  async remove(keys: string[]): Promise<void> {
    for (const key of keys) {
      const file = this.file(key);
      if (file) await rm(file, { force: true }).catch((err) => this.failed('delete', key, err));
    }
  }

  async server(): Promise<string> {
    return `the file system at ${this.root}`;
  }

  /** Removes scratch files older than `ms` below `under` (a killed writer's): no write takes that long. */
  async removeScratch(under: string, ms: number, now = Date.now()): Promise<number> {
    let removed = 0;
    const walk = async (dir: string): Promise<void> => {
      for (const e of await readdir(dir, { withFileTypes: true }).catch(() => [])) {
        const full = join(dir, e.name);
        if (e.isDirectory()) await walk(full);
        else if (/\.tmp-[0-9]+-[0-9a-f]+$/.test(e.name) && now - ((await statOrNull(full))?.mtimeMs ?? now) > ms) {
          await rm(full, { force: true });
          removed++;
        }
      }
    };
    await walk(join(this.root, under));
    return removed;
  }

  /** The bytes in a scratch file beside `file`; flushed to disk first when they are a conditional
   * write's (the pointer and history must survive a crash once written). */
  private async scratch(file: string, body: Uint8Array, flush: boolean): Promise<string> {
    const name = `${file}.tmp-${process.pid}-${randomBytes(4).toString('hex')}`;
    const handle = await open(name, 'wx');
    try {
      await handle.writeFile(body);
      if (flush) await handle.sync();
    } finally {
      await handle.close();
    }
    return name;
  }

  private async underLock(key: string, file: string, critical: () => Promise<void>): Promise<void> {
    const lock = `${file}.lock`;
    try {
      await (await open(lock, 'wx')).close();
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') this.failed('lock', key, err);
      await this.breakIfStale(lock);
      throw new ConditionFailed(key, 409);
    }
    try {
      await critical();
    } finally {
      await unlink(lock).catch(() => {});
    }
  }

  /** A stale lock is moved aside (rename is atomic: of two breakers one moves it) and checked again
   * there: a lock taken afresh in between is put back if its name is still free. */
  private async breakIfStale(lock: string): Promise<void> {
    const s = await statOrNull(lock);
    if (!s || Date.now() - s.mtimeMs <= STALE_LOCK_MS) return;
    const aside = `${lock}.broken-${process.pid}-${randomBytes(4).toString('hex')}`;
    try {
      await rename(lock, aside);
    } catch {
      return;
    }
    const moved = await statOrNull(aside);
    if (moved && Date.now() - moved.mtimeMs <= STALE_LOCK_MS) await link(aside, lock).catch(() => {});
    await rm(aside, { force: true });
  }

  private failed(what: string, key: string, err: unknown): never {
    if (err instanceof ConditionFailed || err instanceof StorageError) throw err;
    const code = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
    const advice =
      code === 'EACCES' || code === 'EPERM'
        ? 'check that this user may write there'
        : code === 'ENOSPC'
          ? 'free some space on that disk'
          : 'check the disk and its permissions';
    throw new StorageError(`cannot ${what} ${this.where}${key} (${code}): ${advice}, then run the command again`);
  }
}
