// Reads the tree through its manifest: a file is served only if the manifest lists it and its bytes
// hash to the listed sha256. A corrupted or truncated file (a bad disk, a partial sync, a tampered
// bucket) is refused with an OriginError (the client gets 502 and retries) instead of being served,
// and reported once in the log for the operator. Verified bodies are kept in a bounded cache, so a
// warm file costs neither a read nor a hash, and the ETag is the manifest's sha256. A path's manifest
// entry is found in the one shard its path hashes to: the object manifest.json lists for it and, when
// that is a delta, the chain of bases it lists (edge/contract/manifest.ts), read in parallel, each
// checked against its sha256. Shard objects are kept by sha256, so releases sharing a chain share it.
import { treePaths, type ManifestEntry, type ManifestIndex } from '../contract/tree.js';
import { shardOf } from '../contract/shards.js';
import {
  checkChain,
  indexShardObject,
  lookupChain,
  parseManifestIndex,
  resolveChain,
  parseShardObject,
  type IndexedShardObject,
} from '../contract/manifest.js';
import { LoadingCache } from '../loading-cache.js';
import { OriginError, type Origin, type OriginObject, type ReleaseFiles } from '../origin.js';
import { sha256Hex } from '../responses.js';
import { consoleLog, type HandlerLog } from '../handler-log.js';

export interface VerifiedOriginOptions {
  /** Bytes of verified file bodies kept in memory (default 16 MiB). */
  bodyCacheBytes?: number;
  /** Bytes of manifest shards kept in memory (default 16 MiB). */
  manifestCacheBytes?: number;
  /** The cache of parsed shard objects, to share between the releases of a store (their chains
   * share objects); by default one of manifestCacheBytes of its own. */
  shardObjects?: LoadingCache<IndexedShardObject>;
  /** Hears of every file that failed verification (corrupt, or listed and missing), with a way to
   * check it again later (true once it reads and verifies): the local server's /health. */
  onFailure?: (failure: VerificationFailure) => void;
  /** Where a refused file is reported, once per path (default: one JSON line on stderr). */
  log?: HandlerLog;
}

export interface VerificationFailure {
  /** The tree path (never a path of the machine). */
  path: string;
  /** The sha256 the manifest (or the edge index) lists for it: in a store, the object's name. */
  sha256?: string;
  recheck(): Promise<boolean>;
}

export class IntegrityError extends OriginError {
  constructor(message: string) {
    super(message, 'unavailable');
    this.name = 'IntegrityError';
  }
}

export class VerifiedOrigin implements Origin {
  readonly description: string;
  private index: Promise<{ index: ManifestIndex; sha256: string }> | null = null;
  private readonly shards: LoadingCache<IndexedShardObject>;
  private readonly bodies: LoadingCache<OriginObject | null>;
  private readonly reported = new Set<string>();

  constructor(
    private readonly raw: ReleaseFiles,
    options: VerifiedOriginOptions = {},
  ) {
    this.description = raw.description;
    this.shards = options.shardObjects ?? new LoadingCache(options.manifestCacheBytes ?? 16 * 1024 * 1024);
    this.bodies = new LoadingCache(options.bodyCacheBytes ?? 16 * 1024 * 1024);
    this.onFailure = options.onFailure;
    this.log = options.log ?? consoleLog;
  }

  private readonly log: HandlerLog;

  private readonly onFailure: VerifiedOriginOptions['onFailure'];

  /** Tells the listener of a file that failed verification, with how to check it again. */
  private failed(path: string, entry: { sha256?: string; size?: number }): void {
    this.onFailure?.({
      path,
      sha256: entry.sha256,
      recheck: async () => {
        const object = await this.raw.read(path, entry.sha256).catch(() => null);
        if (!object) return false;
        const ok =
          (entry.sha256 === undefined || (await sha256Hex(object.body)) === entry.sha256) &&
          (entry.size === undefined || object.body.length === entry.size);
        // Verified again: a later read should not be refused from the reports of the old bytes.
        if (ok) this.reported.delete(path);
        return ok;
      },
    });
  }

  /** The file's bytes and sha256; null when the manifest does not list it. */
  read(path: string): Promise<OriginObject | null> {
    return this.bodies.get(path, async () => {
      const entry = await this.entry(path);
      if (!entry) return { value: null, weight: 64 };
      const object = await this.raw.read(path, entry.sha256);
      if (!object) {
        this.failed(path, entry);
        throw new OriginError(`${path} is listed in the manifest but missing from ${this.description}`, 'unavailable');
      }
      await this.check(path, object.body, entry);
      return { value: { body: object.body, sha256: entry.sha256 }, weight: object.body.length + 128 };
    });
  }

  /** A file whose sha256 the caller already has from a verified file (the edge index lists its
   * shards' hashes), read and checked without its manifest entry. Not kept: the caller keeps what it
   * parses. */
  async readChecked(path: string, sha256: string): Promise<Uint8Array> {
    const object = await this.raw.read(path, sha256);
    if (!object) {
      this.failed(path, { sha256 });
      throw new OriginError(`${path} is listed in the edge index but missing from ${this.description}`, 'unavailable');
    }
    await this.check(path, object.body, { sha256 });
    return object.body;
  }

  /** The release the manifest names. */
  async releaseName(): Promise<string> {
    return (await this.manifestIndex()).release;
  }

  /** The sha256 of the release's manifest.json: what it holds, byte for byte. */
  async manifestSha256(): Promise<string> {
    return (await this.manifest()).sha256;
  }

  /** The manifest entry of a path, or null when the tree does not list it. */
  async entry(path: string): Promise<ManifestEntry | null> {
    const index = await this.manifestIndex();
    return lookupChain(await this.chain(shardOf(path, index.shards.length)), path);
  }

  /** The manifest's shards as manifest.json lists them: a shard whose listed sha256 is the same in
   * two releases lists the same files (release-changes.ts compares only the others). */
  async shardHeads(): Promise<readonly ManifestEntry[]> {
    return (await this.manifestIndex()).shards;
  }

  /** Every entry of shard `n`, sorted by path: its chain of shard objects applied. */
  async shardFiles(n: number): Promise<ManifestEntry[]> {
    const chain = await this.chain(n);
    return this.parsed(() =>
      resolveChain(
        chain[0].object,
        chain.slice(1).map((o) => o.object),
        this.description,
      ),
    );
  }

  /** Shard `n`'s head and the chain of bases it lists, each checked; the chain checked to continue. */
  private async chain(n: number): Promise<IndexedShardObject[]> {
    const index = await this.manifestIndex();
    const listed = index.shards[n];
    const head = await this.shardObject(listed, n, index, listed.path);
    const bases = await Promise.all(
      head.object.bases.map((b) =>
        this.shardObject({ ...listed, ...b }, n, index, `${listed.path} (base ${b.sha256})`),
      ),
    );
    this.parsed(() =>
      checkChain(
        head.object,
        bases.map((b) => b.object),
        `${this.description}${listed.path}`,
      ),
    );
    return [head, ...bases];
  }

  /** Shard object `n` (a head, or a base of one), read, checked against its sha256 and parsed; kept
   * by sha256 and shard (an object's bytes fix its content, the shard fixes what it may list). */
  private shardObject(
    listed: { path: string; sha256: string; size: number },
    n: number,
    index: ManifestIndex,
    what: string,
  ): Promise<IndexedShardObject> {
    const count = index.shards.length;
    return this.shards.get(`${count}/${n}/${listed.sha256}`, async () => {
      const object = await this.raw.read(listed.path, listed.sha256);
      if (!object) {
        this.failed(listed.path, listed);
        throw new OriginError(`${what} is missing from ${this.description}`, 'unavailable');
      }
      await this.check(listed.path, object.body, listed);
      const parsed = this.parsed(() =>
        parseShardObject(object.body, n, count, `${this.description}${what}`, index.format !== 2),
      );
      // Parsed entries take a few times their JSON size in memory.
      return { value: indexShardObject(parsed), weight: object.body.length * 3 };
    });
  }

  private async manifestIndex(): Promise<ManifestIndex> {
    return (await this.manifest()).index;
  }

  /** manifest.json, parsed, and its sha256; read once (again only after a failed read). */
  private manifest(): Promise<{ index: ManifestIndex; sha256: string }> {
    return (this.index ??= (async () => {
      const object = await this.raw.read(treePaths.manifest);
      if (!object)
        throw new OriginError(
          `the tree at ${this.description} has no ${treePaths.manifest}: is it a rendered isoatlas tree?`,
          'unavailable',
        );
      // In a store, the pointer or history vouches for the manifest, and through it for every file.
      if (this.raw.manifestSha256)
        await this.check(treePaths.manifest, object.body, { sha256: this.raw.manifestSha256 });
      const index = this.parsed(() => parseManifestIndex(object.body, `${this.description}${treePaths.manifest}`));
      return { index, sha256: this.raw.manifestSha256 ?? (await sha256Hex(object.body)) };
    })().catch((err) => {
      this.index = null;
      throw err;
    }));
  }

  private async check(path: string, body: Uint8Array, entry: { sha256: string; size?: number }): Promise<void> {
    const sha256 = await sha256Hex(body);
    if (sha256 === entry.sha256 && (entry.size === undefined || body.length === entry.size)) return;
    this.failed(path, entry);
    if (!this.reported.has(path)) {
      this.reported.add(path);
      const listed =
        entry.size === undefined
          ? `the edge index lists sha256 ${entry.sha256}`
          : `the manifest lists ${entry.size} bytes with sha256 ${entry.sha256}`;
      this.log.warn(
        { event: 'file_refused', path, origin: this.description, bytes: body.length, sha256 },
        `refusing ${path} from ${this.description}: ${body.length} bytes with sha256 ${sha256}, ${listed}`,
      );
    }
    throw new IntegrityError(`${path} does not match the manifest (or the edge index)`);
  }

  /** A manifest file parsed by the contract's parser; a malformed one is the origin's fault. */
  private parsed<T>(parse: () => T): T {
    try {
      return parse();
    } catch (err) {
      throw new OriginError((err as Error).message, 'unavailable');
    }
  }
}
