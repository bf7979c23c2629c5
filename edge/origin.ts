// The origin: where the edge function reads files of the rendered tree (a local directory, an HTTP
// base URL, and in the CDN deployment the S3 bucket). Paths are tree paths from contract/tree.ts,
// never raw request paths.

export interface OriginObject {
  body: Uint8Array;
  /** Hex sha256 of the body when the origin knows it (verified against the manifest). */
  sha256?: string;
}

export interface Origin {
  /** The file's bytes, or null when the tree has no such file. Throws OriginError when the origin
   * itself fails (unreachable, times out, answers an error). */
  read(path: string): Promise<OriginObject | null>;
  /** Bytes `start` to `end` (inclusive) of the file, exactly; null when there is no such file. An
   * origin that cannot read ranges has none (a mirror then reads objects one by one). */
  readRange?(path: string, start: number, end: number): Promise<OriginObject | null>;
  /** The file's size in bytes without reading it, or null when there is no such file; an origin that
   * cannot tell cheaply has none. */
  size?(path: string): Promise<number | null>;
  /** For log lines, e.g. `dir:/srv/tree` or `http://mirror/`. */
  readonly description: string;
}

/** The files of one release, read by tree path. A rendered tree answers by path; a store of releases
 * (edge/contract/store-layout.ts) by the sha256 the manifest lists, which the reader passes along. */
export interface ReleaseFiles {
  readonly description: string;
  /** The sha256 manifest.json must have, when something vouches for it (a store's pointer or history). */
  readonly manifestSha256?: string;
  /** `sha256` is the manifest's (or the edge index's) hash of the file; absent for manifest.json. */
  read(path: string, sha256?: string): Promise<OriginObject | null>;
}

/** An origin holding several releases and a pointer to the current one (a published store). The
 * edge pins one release per request, so no response mixes files of two releases. */
export interface VersionedOrigin {
  readonly description: string;
  /** The current release, or the named one; null when the store has no such release. */
  pin(release?: string): Promise<PinnedRelease | null>;
  /** The releases it keeps, oldest first, and the current one's name; absent when it holds one. */
  list?(): Promise<{ current: string; releases: { release: string; published_at: string; manifest_sha256: string }[] }>;
}

export interface PinnedRelease {
  release: string;
  files: ReleaseFiles;
  /** Public path of a tree file below the structure base (e.g. `releases/<r>/structures/x.cif`). */
  publicPath(treePath: string): string;
}

export function isVersioned(origin: Origin | VersionedOrigin): origin is VersionedOrigin {
  return typeof (origin as VersionedOrigin).pin === 'function';
}

/** How an origin failed, which decides the edge's answer: `unavailable` (refused or reset the
 * connection, answered an error or garbage: 502), `overloaded` (said it cannot answer now, e.g. HTTP
 * 503/429 or S3 SlowDown: 503), `timeout` (no complete answer in time: 504). */
export type OriginFailure = 'unavailable' | 'overloaded' | 'timeout';

export class OriginError extends Error {
  constructor(
    message: string,
    readonly kind: OriginFailure,
    /** How long the origin asked us to wait (its Retry-After), when it said. */
    readonly retryAfterSeconds?: number,
    /** Why it could not be reached, as the network said (ECONNREFUSED, ENOTFOUND, a TLS error code). */
    readonly code?: string,
    /** The HTTP status it answered, when it answered one (429 and 503 say different things). */
    readonly status?: number,
  ) {
    super(message);
    this.name = 'OriginError';
  }
}
