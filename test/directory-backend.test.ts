// The directory backend's conditional writes (edge/store/directory-backend.ts) are what publish, gc
// and mirror rely on to never lose a change of the history or the pointer: each condition is
// refused when it does not hold, concurrent writers of one key never both win, and a store over a
// backend that ignores the conditions is refused (and shown to lose updates).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import {
  closeSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { open } from 'node:fs/promises';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DirectoryBackend, READ_NOW_BYTES, STALE_LOCK_MS } from '../edge/store/directory-backend.js';
import { ReleaseStore } from '../edge/store/release-store.js';
import { ConditionFailed, StorageError, type StoreBackend, type WriteOptions } from '../edge/store/backend.js';
import { HISTORY_KEY, PROBE_KEY, objectKey } from '../edge/contract/store-layout.js';

let root: string;
let n = 0;
const fresh = () => new DirectoryBackend(join(root, `store-${n++}`));
const json = { contentType: 'application/json', cacheControl: 'no-cache' };
const text = (s: string) => Buffer.from(s);
const refusal = (p: Promise<unknown>) =>
  p.then(
    () => null,
    (err: unknown) => (err instanceof ConditionFailed ? err.status : err),
  );

beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), 'isoatlas-directory-backend-'));
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** A backend that drops every condition: what a server ignoring conditional writes does. */
class IgnoresConditions implements StoreBackend {
  constructor(private readonly inner: DirectoryBackend) {}
  get where() {
    return this.inner.where;
  }
  get description() {
    return this.inner.description;
  }
  readonly noun = 'directory';
  read(key: string) {
    return this.inner.read(key);
  }
  write(key: string, body: Uint8Array, o: WriteOptions) {
    return this.inner.write(key, body, { contentType: o.contentType, cacheControl: o.cacheControl });
  }
  list(prefix: string) {
    return this.inner.list(prefix);
  }
  remove(keys: string[]) {
    return this.inner.remove(keys);
  }
  server() {
    return Promise.resolve('a test backend');
  }
}

/** Twenty writers each add their own release to the history at once, through the store's
 * read-modify-write; returns the releases the history ends with. */
async function concurrentAppends(backend: StoreBackend): Promise<string[]> {
  const store = new ReleaseStore(backend);
  const names = Array.from({ length: 20 }, (_, i) => `r${i}`);
  await Promise.all(
    names.map((release) =>
      store.updateHistory((h) => ({
        ...h,
        releases: [
          ...h.releases,
          { release, manifest_sha256: 'a'.repeat(64), published_at: new Date(0).toISOString() },
        ],
      })),
    ),
  );
  return (await store.history()).releases.map((r) => r.release).sort();
}

describe('directory backend', () => {
  it('if-none-match creates a key only when it is absent: of concurrent creators exactly one wins, whole', async () => {
    const b = fresh();
    const outcomes = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        refusal(b.write('k.json', text(`writer ${i}`), { ...json, ifNoneMatch: true })),
      ),
    );
    expect(outcomes.filter((o) => o === null)).toHaveLength(1);
    expect(outcomes.filter((o) => o === 412)).toHaveLength(7);
    const winner = outcomes.indexOf(null);
    expect(Buffer.from((await b.read('k.json'))!.body).toString()).toBe(`writer ${winner}`);
    expect(await refusal(b.write('k.json', text('late'), { ...json, ifNoneMatch: true }))).toBe(412);
  });

  it('if-match replaces a key only while its tag is the one read; a missing key fails it too', async () => {
    const b = fresh();
    await b.write('k.json', text('one'), json);
    const first = (await b.read('k.json'))!.etag;
    await b.write('k.json', text('two'), { ...json, ifMatch: first });
    expect(Buffer.from((await b.read('k.json'))!.body).toString()).toBe('two');
    // The tag read before the change no longer matches.
    expect(await refusal(b.write('k.json', text('three'), { ...json, ifMatch: first }))).toBe(412);
    expect(Buffer.from((await b.read('k.json'))!.body).toString()).toBe('two');
    expect(await refusal(b.write('absent.json', text('x'), { ...json, ifMatch: first }))).toBe(412);
    expect(existsSync(join(b.root, 'absent.json'))).toBe(false);
    // Neither refusal left a scratch file or a lock behind.
    expect(readdirSync(b.root).sort()).toEqual(['k.json']);
  });

  it('a key another writer holds is refused like S3’s 409; a lock left by a dead writer is broken', async () => {
    const b = fresh();
    await b.write('k.json', text('one'), json);
    const tag = (await b.read('k.json'))!.etag;
    writeFileSync(join(b.root, 'k.json.lock'), '');
    expect(await refusal(b.write('k.json', text('two'), { ...json, ifMatch: tag }))).toBe(409);
    expect(Buffer.from((await b.read('k.json'))!.body).toString()).toBe('one');
    // Older than any write holds it: the next attempt breaks it, the one after writes.
    const old = (Date.now() - STALE_LOCK_MS - 60_000) / 1000;
    utimesSync(join(b.root, 'k.json.lock'), old, old);
    expect(await refusal(b.write('k.json', text('two'), { ...json, ifMatch: tag }))).toBe(409);
    expect(existsSync(join(b.root, 'k.json.lock'))).toBe(false);
    await b.write('k.json', text('two'), { ...json, ifMatch: tag });
    expect(Buffer.from((await b.read('k.json'))!.body).toString()).toBe('two');
  });

  it('the store’s read-modify-write loses no update among concurrent writers; without the conditions it does', async () => {
    const all = Array.from({ length: 20 }, (_, i) => `r${i}`).sort();
    expect(await concurrentAppends(fresh())).toEqual(all);
    // The control: the same writers on a backend that ignores the conditions overwrite each other.
    expect((await concurrentAppends(new IgnoresConditions(fresh()))).length).toBeLessThan(all.length);
  });

  it('passes the conditional-write probe that publish, rollback and gc run; a backend ignoring conditions fails it, saying so', async () => {
    const b = fresh();
    await new ReleaseStore(b).checkConditionalWrites('gc');
    await new ReleaseStore(b).checkConditionalWrites('gc'); // the probe exists now: both conditions must still fail
    expect(existsSync(join(b.root, PROBE_KEY))).toBe(true);
    const ignoring = new ReleaseStore(new IgnoresConditions(fresh()));
    const err = await ignoring.checkConditionalWrites('gc').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StorageError);
    expect((err as Error).message).toMatch(
      /^a test backend ignores conditional writes \(If-None-Match: \* and If-Match on PutObject of .*conditional-write-probe succeeded/,
    );
  });

  it('lists by prefix (objects by sha256, never scratch files or locks), removes, and reads nothing outside its root', async () => {
    const b = fresh();
    const store = new ReleaseStore(b);
    const a = 'a1'.padEnd(64, '0');
    const c = 'c2'.padEnd(64, '0');
    await store.putObject(a, text('A'));
    await store.putObject(c, text('CC'));
    writeFileSync(join(b.root, `${objectKey(a)}.tmp-123-abcdef01`), 'half');
    writeFileSync(join(b.root, `${objectKey(c)}.lock`), '');
    await b.write(HISTORY_KEY, text('{}'), json);
    expect((await b.list('objects/a')).map((o) => o.key)).toEqual([objectKey(a)]);
    expect([...(await store.objects())].map(([sha, o]) => [sha, o.size]).sort()).toEqual([
      [a, 1],
      [c, 2],
    ]);
    await store.deleteObjects([a, 'f'.repeat(64)]);
    expect([...(await store.objects()).keys()]).toEqual([c]);
    expect(await b.read('../outside')).toBeNull();
    await expect(b.write('../outside', text('x'), json)).rejects.toThrow(StorageError);
    expect(readFileSync(join(b.root, HISTORY_KEY), 'utf8')).toBe('{}');
    expect(await b.removeScratch('objects', 0)).toBe(1);
  });

  it('reads a small file while every thread of the pool is busy (a pack streams thousands), a large one whole, a directory or nothing as null', async () => {
    const b = fresh();
    const small = randomBytes(4096);
    const large = randomBytes(READ_NOW_BYTES + 1);
    mkdirSync(join(b.root, 'objects', 'dir'), { recursive: true });
    writeFileSync(join(b.root, 'objects', 'small'), small);
    writeFileSync(join(b.root, 'objects', 'large'), large);
    // Each thread of libuv's pool held by an open of a FIFO, which returns once a writer opens it.
    const fifos = Array.from({ length: Number(process.env.UV_THREADPOOL_SIZE) || 4 }, (_, i) =>
      join(b.root, `fifo-${i}`),
    );
    execFileSync('mkfifo', fifos);
    const held = fifos.map((f) => open(f, 'r'));
    let read: Uint8Array | null | undefined;
    const reading = b.read('objects/small').then((o) => (read = o?.body ?? null));
    // Turns of the event loop, no timer: a read queued behind the held threads cannot end in them.
    for (let i = 0; i < 10; i++) await new Promise<void>((turned) => setImmediate(turned));
    const whilePoolBusy = read;
    const writers = fifos.map((f) => openSync(f, 'w'));
    for (const handle of await Promise.all(held)) await handle.close();
    for (const fd of writers) closeSync(fd);
    await reading;
    expect(whilePoolBusy).toEqual(small);
    // Compared as bytes: a deep equality walks them one by one.
    expect(Buffer.from((await b.read('objects/large'))!.body).equals(large)).toBe(true);
    expect(await b.read('objects/dir')).toBeNull();
    expect(await b.read('objects/none')).toBeNull();
  });
});
