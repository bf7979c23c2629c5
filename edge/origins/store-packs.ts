// The packs of a store that holds the objects but not the packs (a mirror: edge/contract/packs.ts),
// rebuilt on demand for other mirrors: a pack's index is found through the pack lists of the releases
// the store's pointer and history name, and any byte range of the pack is the matching bytes of the
// objects its index lists, each checked against its sha256 as it is read. A missing or corrupt object
// is an IntegrityError (the server's 502), never wrong bytes.
import { HISTORY_KEY, POINTER_KEY, objectKey, parseHistory, parsePointer } from '../contract/store-layout.js';
import { parseManifestIndex } from '../contract/manifest.js';
import { parsePackIndex, parsePackList, type PackIndex } from '../contract/packs.js';
import { LoadingCache } from '../loading-cache.js';
import type { Origin } from '../origin.js';
import { sha256Hex } from '../responses.js';
import { IntegrityError } from './verified.js';

/** A pack the map does not know sends the store's releases to be read again at most this often: a
 * sync adds releases, and an unknown name must not make every request read them all. */
const RESCAN_MS = 2_000;
/** Objects read at once while a range is rebuilt. */
const READS_IN_FLIGHT = 32;

/** A range of a pack that covers an object this store does not hold. A mirror holds only the objects
 * of the releases it keeps, while a pack list may name earlier packs holding others (or objects gc
 * has since deleted one by one), so this is not damage: the reader asks for the objects it wants. */
export class ObjectNotHeld extends Error {
  constructor(
    readonly sha256: string,
    what: string,
  ) {
    super(`${objectKey(sha256)} (${what}) is not held here`);
  }
}

export class StorePacks {
  /** Pack sha256 → its index (sha256 and size), from every pack list read so far. */
  private readonly indexOf = new Map<string, { sha256: string; size: number }>();
  /** Manifests whose pack lists are in the map. */
  private readonly read = new Set<string>();
  private scannedAt = Number.NEGATIVE_INFINITY;
  private scanning: Promise<void> | null = null;
  private readonly indexes = new LoadingCache<PackIndex>(64 * 1024 * 1024);

  constructor(
    private readonly files: Origin,
    private readonly now: () => number = Date.now,
  ) {}

  /** The index of the pack with this sha256, or null when no release of the store names it. */
  async index(pack: string): Promise<PackIndex | null> {
    if (!this.indexOf.has(pack)) {
      if (!this.scanning && this.now() - this.scannedAt >= RESCAN_MS)
        this.scanning = this.scan().finally(() => (this.scanning = null));
      // A scan under way may be the one that finds it: the first requests of a sync come together.
      if (this.scanning) await this.scanning;
    }
    const ref = this.indexOf.get(pack);
    if (!ref) return null;
    return this.indexes.get(ref.sha256, async () => {
      const body = await this.object(ref.sha256, `the index of pack ${pack}`);
      let index: PackIndex;
      try {
        index = parsePackIndex(body, objectKey(ref.sha256));
      } catch (err) {
        throw new IntegrityError((err as Error).message);
      }
      if (index.pack.sha256 !== pack)
        throw new IntegrityError(`${objectKey(ref.sha256)}: the index of pack ${index.pack.sha256}, not of ${pack}`);
      // Parsed, an index weighs about twice its JSON.
      return { value: index, weight: body.length * 2 };
    });
  }

  /** Bytes `start` to `end` (inclusive) of the pack `index` describes. */
  async bytes(index: PackIndex, start: number, end: number): Promise<Uint8Array> {
    const out = new Uint8Array(end - start + 1);
    const objects = index.objects;
    // The first object that ends after `start`: objects tile the pack in offset order.
    let lo = 0;
    let hi = objects.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (objects[mid][1] + objects[mid][2] <= start) lo = mid + 1;
      else hi = mid;
    }
    const touched: typeof objects = [];
    for (let i = lo; i < objects.length && objects[i][1] <= end; i++) touched.push(objects[i]);
    for (let i = 0; i < touched.length; i += READS_IN_FLIGHT) {
      await Promise.all(
        touched.slice(i, i + READS_IN_FLIGHT).map(async ([sha, offset, length]) => {
          const body = await this.object(sha, `an object of pack ${index.pack.sha256}`);
          if (body.length !== length)
            throw new IntegrityError(`${objectKey(sha)}: ${body.length} bytes, but its pack's index lists ${length}`);
          const from = Math.max(start, offset);
          const to = Math.min(end, offset + length - 1);
          out.set(body.subarray(from - offset, to - offset + 1), from - start);
        }),
      );
    }
    return out;
  }

  /** An object of the store, checked against its name. */
  private async object(sha: string, what: string): Promise<Uint8Array> {
    const file = await this.files.read(objectKey(sha));
    if (!file) throw new ObjectNotHeld(sha, what);
    if ((await sha256Hex(file.body)) !== sha) throw new IntegrityError(`${objectKey(sha)} does not hash to its name`);
    return file.body;
  }

  /** Reads the pack lists of the releases the store names that were not read yet. A release whose
   * manifest or pack list cannot be read is passed over: its packs are not served. */
  private async scan(): Promise<void> {
    this.scannedAt = this.now();
    const text = async (key: string) => {
      const f = await this.files.read(key);
      return f ? new TextDecoder().decode(f.body) : null;
    };
    const [pointer, history] = await Promise.all([text(POINTER_KEY), text(HISTORY_KEY)]);
    const manifests = new Set<string>();
    // Unreadable, they name no release here; the API's answers say what is wrong with them.
    try {
      if (pointer) manifests.add(parsePointer(pointer).manifest_sha256);
      if (history) {
        const h = parseHistory(history);
        for (const r of [...h.releases, ...h.retired]) manifests.add(r.manifest_sha256);
      }
    } catch {}
    for (const sha of manifests) {
      if (this.read.has(sha)) continue;
      try {
        const packs = parseManifestIndex(await this.object(sha, 'a manifest'), objectKey(sha)).packs;
        if (packs) {
          const list = parsePackList(await this.object(packs.sha256, 'a pack list'), objectKey(packs.sha256));
          for (const p of list.packs) this.indexOf.set(p.sha256, p.index);
        }
        this.read.add(sha);
      } catch {
        // Gone (collected) or damaged: its packs are not served, and the next scan tries again.
      }
    }
  }
}
