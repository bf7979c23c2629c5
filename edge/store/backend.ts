// Where a store's bytes live, apart from what they mean (restic's backend/repository split): a
// backend reads, writes, lists and removes keys and knows nothing of releases; the store
// (release-store.ts) knows the layout (edge/contract/store-layout.ts) and the rules for changing it.
// Two backends: an S3 bucket prefix (s3-backend.ts) and a directory (directory-backend.ts). A
// read-only source (an HTTP base URL, a bucket read by the edge) is an Origin: the read half of one.
//
// What publish, rollback and gc rely on, and every backend must provide for real (they refuse one
// whose conditional writes fail the probe in release-store.ts):
//   - a write with `ifNoneMatch` creates the key only if it does not exist;
//   - a write with `ifMatch` replaces the key only if its tag is still the one read;
//   - a failed condition throws ConditionFailed and changes nothing;
//   - a reader never sees a half-written value under its key.
import type { Origin } from '../origin.js';

export interface StoredObject {
  body: Uint8Array;
  /** Names this version of the value, for a later `ifMatch` (S3's ETag). */
  readonly etag: string;
}

export interface ListedObject {
  /** Relative to the backend's root, as given to `write`. */
  key: string;
  size: number;
  /** When this version was written (S3's LastModified, a file's mtime). */
  modified: Date;
}

export interface WriteOptions {
  contentType: string;
  /** Kept with the object where the backend serves it (S3 to the CDN); ignored elsewhere. */
  cacheControl: string;
  /** Write only if nothing is stored under the key (If-None-Match: *). */
  ifNoneMatch?: boolean;
  /** Write only if the stored value still has this tag (If-Match). */
  ifMatch?: string;
}

export interface StoreBackend extends Origin {
  /** Where it is, as messages name it: `s3://bucket/prefix/` or `/srv/mirror/`. Keys follow it. */
  readonly where: string;
  /** What a store there is, for advice: "bucket prefix" or "directory". */
  readonly noun: string;
  /** The value under `key` with its tag, or null when there is none. */
  read(key: string): Promise<StoredObject | null>;
  /** Throws ConditionFailed when a condition does not hold. */
  write(key: string, body: Uint8Array, options: WriteOptions): Promise<void>;
  /** Every key that starts with `prefix`. */
  list(prefix: string): Promise<ListedObject[]>;
  /** Removes the keys; a key already gone is not an error. */
  remove(keys: string[]): Promise<void>;
  /** The server or file system that honours (or ignores) conditional writes, for the probe's message. */
  server(): Promise<string>;
}

/** A conditional write refused: the key changed (or appeared, or vanished) since it was read, or
 * another writer holds it this instant (S3's 409). The caller reads again and retries. */
export class ConditionFailed extends Error {
  constructor(
    readonly key: string,
    readonly status: 412 | 409,
  ) {
    super(
      `conditional write of ${key} refused (${status === 412 ? 'it changed since it was read' : 'another write of it was under way'})`,
    );
    this.name = 'ConditionFailed';
  }
}

/** Storage that cannot be reached or refuses what it is asked: exit code EXIT.storage. */
export class StorageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'StorageError';
  }
}
