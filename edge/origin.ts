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
  /** For log lines, e.g. `dir:/srv/tree` or `http://mirror/`. */
  readonly description: string;
}

/** An origin holding several releases and a pointer to the current one (a published bucket). The
 * edge pins one release per request, so no response mixes files of two releases. */
export interface VersionedOrigin {
  readonly description: string;
  /** The current release, as an Origin whose paths are tree paths of that release. */
  pin(): Promise<PinnedRelease>;
}

export interface PinnedRelease {
  release: string;
  origin: Origin;
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
  ) {
    super(message);
    this.name = 'OriginError';
  }
}
