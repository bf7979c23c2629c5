// The store of releases (restic's repository) over any backend (backend.ts): the layout of
// edge/contract/store-layout.ts — pointer, history, edge record, objects and packs by sha256, the
// probe — and the rules for changing it. The pointer, the history and the edge record are changed
// only by a read-modify-write conditional on the version read, so concurrent publishes, rollbacks, gc
// runs and mirror syncs never lose each other's change; objects and packs are written once under
// their sha256 and never changed. publish, rollback, releases, gc (build/publish/) and mirror (edge/mirror/) all use it.
import {
  EDGE_KEY,
  HISTORY_KEY,
  OBJECTS_PREFIX,
  POINTER_KEY,
  PROBE_KEY,
  emptyHistory,
  objectKey,
  objectSha,
  parseEdgeRecord,
  parseHistory,
  parsePointer,
  type EdgeRecord,
  type ReleaseHistory,
  type ReleasePointer,
} from '../contract/store-layout.js';
import { PACKS_PREFIX, packKey, packSha } from '../contract/packs.js';
import { ConditionFailed, StorageError, type StoreBackend } from './backend.js';

/** The pointer and history must stay fresh at the CDN; objects never change. */
export const POINTER_CACHE_CONTROL = 'public, max-age=10, must-revalidate';
export const OBJECT_CACHE_CONTROL = 'public, max-age=31536000, immutable';

/** An object or pack a listing found. */
export interface ListedSha {
  sha: string;
  size: number;
  modified: Date;
}

/** What a read-modify-write does with the value it read: the value to write, or null for none. */
export type Change<T> = (value: T) => T | null | Promise<T | null>;

/** Conditional writes that keep losing to others are given up after this many tries. */
const ATTEMPTS = 20;

export class ReleaseStore {
  readonly where: string;
  constructor(readonly backend: StoreBackend) {
    this.where = backend.where;
  }

  /** A value's bytes and tag, or null when there is none. */
  async get(key: string): Promise<{ body: Buffer; etag: string } | null> {
    const got = await this.backend.read(key);
    return got
      ? { body: Buffer.from(got.body.buffer, got.body.byteOffset, got.body.byteLength), etag: got.etag }
      : null;
  }

  async pointer(): Promise<ReleasePointer | null> {
    const got = await this.get(POINTER_KEY);
    return got ? this.parsed(POINTER_KEY, () => parsePointer(got.body.toString('utf8'))) : null;
  }

  async history(): Promise<ReleaseHistory> {
    const got = await this.get(HISTORY_KEY);
    return got ? this.parsed(HISTORY_KEY, () => parseHistory(got.body.toString('utf8'))) : emptyHistory();
  }

  /** The edge record: which KeyValueStore pins this store's release, or null for a store without. */
  async edge(): Promise<EdgeRecord | null> {
    const got = await this.get(EDGE_KEY);
    return got ? this.parsed(EDGE_KEY, () => parseEdgeRecord(got.body.toString('utf8'))) : null;
  }

  /** Read-modify-write of the history, conditional on the version read: a concurrent writer makes
   * the write fail, and the change is made again on what it wrote. `change` returns what to write,
   * or null to leave the history as it is. */
  updateHistory(change: Change<ReleaseHistory>): Promise<ReleaseHistory> {
    return this.update(
      HISTORY_KEY,
      (body) => (body ? this.parsed(HISTORY_KEY, () => parseHistory(body)) : emptyHistory()),
      change,
    );
  }

  /** The same for the pointer. `change` may read the history: read after the pointer, so that a
   * history changed after it is read means a pointer changed after the pointer was read (publishes
   * write the history before the pointer), which makes this write fail and `change` run again. */
  updatePointer(change: Change<ReleasePointer | null>): Promise<ReleasePointer | null> {
    return this.update(
      POINTER_KEY,
      (body) => (body ? this.parsed(POINTER_KEY, () => parsePointer(body)) : null),
      change,
    );
  }

  /** The same for the edge record: two first publishes naming different stores cannot both win. */
  updateEdge(change: Change<EdgeRecord | null>): Promise<EdgeRecord | null> {
    return this.update(EDGE_KEY, (body) => (body ? this.parsed(EDGE_KEY, () => parseEdgeRecord(body)) : null), change);
  }

  private async update<T>(key: string, parse: (body: string | null) => T, change: Change<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      const got = await this.get(key);
      const value = parse(got ? got.body.toString('utf8') : null);
      const next = await change(value);
      if (next === null) return value;
      try {
        await this.backend.write(key, Buffer.from(JSON.stringify(next)), {
          contentType: 'application/json',
          cacheControl: POINTER_CACHE_CONTROL,
          ...(got ? { ifMatch: got.etag } : { ifNoneMatch: true }),
        });
        return next;
      } catch (err) {
        if (!(err instanceof ConditionFailed) || attempt >= ATTEMPTS) throw err;
        await new Promise((resolve) => setTimeout(resolve, 20 + Math.random() * 100 * attempt));
      }
    }
  }

  /** Stores an object under its sha256 (the caller hashed the bytes). */
  putObject(sha256: string, body: Uint8Array, contentType = 'application/octet-stream'): Promise<void> {
    return this.backend.write(objectKey(sha256), body, { contentType, cacheControl: OBJECT_CACHE_CONTROL });
  }

  deleteObjects(sha256s: string[]): Promise<void> {
    return this.backend.remove(sha256s.map(objectKey));
  }

  /** Stores a pack under its sha256 (the caller hashed the bytes), once: a pack already there has
   * the same bytes, so a write refused because it exists is done. */
  async putPack(sha256: string, body: Uint8Array): Promise<void> {
    try {
      await this.backend.write(packKey(sha256), body, {
        contentType: 'application/octet-stream',
        cacheControl: OBJECT_CACHE_CONTROL,
        ifNoneMatch: true,
      });
    } catch (err) {
      if (!(err instanceof ConditionFailed)) throw err;
    }
  }

  deletePacks(sha256s: string[]): Promise<void> {
    return this.backend.remove(sha256s.map(packKey));
  }

  /** Every object of the store: sha256 → size and last modification. Listed in 16 slices (by the
   * first hex digit), `concurrency` at once, so a bucket of a million objects lists in about a minute. */
  objects(concurrency = 16): Promise<Map<string, { size: number; modified: Date }>> {
    return this.listed(OBJECTS_PREFIX, objectSha, concurrency);
  }

  /** Every object of the store, one slice at a time: `each` gets the objects whose sha256 begins with
   * one pair of hex digits (256 slices, `concurrency` listed at once), so a caller that keeps no
   * slice holds a bounded share of the store however large it grows (gc). */
  eachObjectSlice(each: (slice: ListedSha[]) => void | Promise<void>, concurrency = 4): Promise<void> {
    return this.sliced(OBJECTS_PREFIX, objectSha, each, concurrency);
  }

  /** Every pack of the store, as `eachObjectSlice` gives objects. */
  eachPackSlice(each: (slice: ListedSha[]) => void | Promise<void>, concurrency = 4): Promise<void> {
    return this.sliced(PACKS_PREFIX, packSha, each, concurrency);
  }

  /** Every pack of the store, as `objects` lists objects. */
  packs(concurrency = 16): Promise<Map<string, { size: number; modified: Date }>> {
    return this.listed(PACKS_PREFIX, packSha, concurrency);
  }

  private async listed(
    prefix: string,
    shaOf: (key: string) => string | null,
    concurrency: number,
  ): Promise<Map<string, { size: number; modified: Date }>> {
    const out = new Map<string, { size: number; modified: Date }>();
    const digits = [...'0123456789abcdef'];
    const worker = async () => {
      for (let digit = digits.shift(); digit !== undefined; digit = digits.shift()) {
        for (const o of await this.backend.list(`${prefix}${digit}`)) {
          const sha = shaOf(o.key);
          if (sha) out.set(sha, { size: o.size, modified: o.modified });
        }
      }
    };
    await Promise.all(Array.from({ length: Math.max(1, Math.min(concurrency, 16)) }, worker));
    return out;
  }

  private async sliced(
    prefix: string,
    shaOf: (key: string) => string | null,
    each: (slice: ListedSha[]) => void | Promise<void>,
    concurrency: number,
  ): Promise<void> {
    const pairs = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'));
    const worker = async () => {
      for (let pair = pairs.shift(); pair !== undefined; pair = pairs.shift()) {
        const slice: ListedSha[] = [];
        for (const o of await this.backend.list(`${prefix}${pair}`)) {
          const sha = shaOf(o.key);
          if (sha) slice.push({ sha, size: o.size, modified: o.modified });
        }
        await each(slice);
      }
    };
    await Promise.all(Array.from({ length: Math.max(1, Math.min(concurrency, 16)) }, worker));
  }

  /** Refuses a backend that ignores conditional writes: publish, rollback and gc rely on them to
   * never lose a history entry nor move the pointer on stale facts. A constant probe object is
   * written with If-None-Match (once it exists the write must be refused) and with If-Match on a tag
   * it cannot have (refused too); a backend that accepts either ignores the condition. */
  async checkConditionalWrites(command: string): Promise<void> {
    const put = (condition: { ifNoneMatch?: boolean; ifMatch?: string }) =>
      this.backend
        .write(PROBE_KEY, PROBE_BODY, {
          contentType: 'application/json',
          cacheControl: POINTER_CACHE_CONTROL,
          ...condition,
        })
        .then(
          () => true,
          (err) => {
            if (err instanceof ConditionFailed) return false;
            throw err;
          },
        );
    // The first run on a store creates the probe; the second write must then be refused.
    const created = await put({ ifNoneMatch: true });
    const ignored: string[] = [];
    if (created && (await put({ ifNoneMatch: true }))) ignored.push('If-None-Match: *');
    if (await put({ ifMatch: '"00000000000000000000000000000000"' })) ignored.push('If-Match');
    if (ignored.length === 0) return;
    throw new StorageError(
      `${await this.backend.server()} ignores conditional writes (${ignored.join(' and ')} on PutObject of ${this.where}${PROBE_KEY} succeeded where S3 answers 412 Precondition Failed), ` +
        `so ${command} could lose another command's entry in releases.json or move current.json on stale facts; ${command} changed nothing but that probe. ` +
        'Use a server that honours them (AWS S3 does; for a local try-out, `npm run local-s3` in docs/OPERATIONS.md), ' +
        `or, only if no other publish, rollback or gc can run on this store meanwhile, add --unsafe-single-writer`,
    );
  }

  private parsed<T>(key: string, parse: () => T): T {
    try {
      return parse();
    } catch (err) {
      throw new Error(
        `${this.where}${key}: ${(err as Error).message}; is this ${this.backend.noun} an isoatlas store published by this version?`,
      );
    }
  }
}

const PROBE_BODY = Buffer.from(
  JSON.stringify({
    purpose: 'isoatlas checks here that this server refuses a conditional write whose condition fails',
  }),
);
