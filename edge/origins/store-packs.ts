// The packs of a store that holds the objects but not the packs (a mirror: edge/contract/packs.ts),
// streamed from its objects for other mirrors (git and restic serve packs from what they hold, never
// rebuilding one whole per request): a pack's index is found through the pack lists of the releases
// the store's pointer and history name, and any byte range of the pack is the matching bytes of the
// objects its index lists, each checked against its sha256 as it is read. A missing or corrupt object
// is an IntegrityError (the server's 502, or an answer cut short), never wrong bytes.
import { createHash } from 'node:crypto';
import { HISTORY_KEY, POINTER_KEY, objectKey, parseHistory, parsePointer } from '../contract/store-layout.js';
import { parseManifestIndex } from '../contract/manifest.js';
import { parsePackIndex, parsePackList, type PackIndex, type PackedObject } from '../contract/packs.js';
import { LoadingCache } from '../loading-cache.js';
import type { Origin } from '../origin.js';
import { IntegrityError } from './verified.js';

/** A pack the map does not know sends the store's releases to be read again at most this often: a
 * sync adds releases, and an unknown name must not make every request read them all. */
const RESCAN_MS = 2_000;
/** Objects read (or their sizes asked) at once. */
const READS_IN_FLIGHT = 32;
/** What an answer reads of a pack at a time: this many objects, or about this many bytes. */
const BATCH_OBJECTS = READS_IN_FLIGHT;
const BATCH_BYTES = 256 * 1024;
/** Packs whose held objects are remembered (for RESCAN_MS). */
const HELD_PACKS = 64;

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
  /** Per pack, when its objects' sizes were checked and the places of those not held. */
  private readonly held = new Map<string, { at: number; gaps: Promise<number[]> }>();

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

  /** The object this store does not hold among those bytes `start` to `end` (inclusive) of the
   * pack cover, or null when it holds them all (by size, without reading them: an answer must know
   * before it starts). Null too when the store cannot tell sizes: a gap then cuts the answer short. */
  async missing(index: PackIndex, start: number, end: number): Promise<ObjectNotHeld | null> {
    const sizeOf = this.files.size?.bind(this.files);
    if (!sizeOf || end < start) return null;
    let held = this.held.get(index.pack.sha256);
    if (!held || this.now() - held.at >= RESCAN_MS) {
      // Sizes change only when a sync or gc runs: checked once per pack per rescan, for all requests.
      const gaps = this.gaps(index, sizeOf);
      held = { at: this.now(), gaps };
      this.held.delete(index.pack.sha256);
      this.held.set(index.pack.sha256, held);
      if (this.held.size > HELD_PACKS) this.held.delete(this.held.keys().next().value!);
      gaps.catch(() => this.held.delete(index.pack.sha256));
    }
    const gaps = await held.gaps;
    const objects = index.objects;
    for (const i of gaps) {
      const [sha, offset, length] = objects[i];
      if (offset <= end && offset + length > start)
        return new ObjectNotHeld(sha, `an object of pack ${index.pack.sha256}`);
    }
    return null;
  }

  /** Bytes `start` to `end` (inclusive) of the pack `index` describes, read from its objects as the
   * reader takes them: at most one batch of objects is held at a time, whatever the pack's size, and
   * nothing more is read once the reader cancels (its client went away). The first batch is read
   * before this resolves, so a missing or damaged object at the start is thrown here, before any
   * answer has begun; one found later errors the stream (the answer is cut short). */
  async stream(index: PackIndex, start: number, end: number): Promise<ReadableStream<Uint8Array>> {
    const objects = index.objects;
    let next = firstEndingAfter(objects, start);
    const batch = async (): Promise<Uint8Array | null> => {
      const taken: PackedObject[] = [];
      let bytes = 0;
      while (next < objects.length && objects[next][1] <= end && taken.length < BATCH_OBJECTS && bytes < BATCH_BYTES) {
        const o = objects[next++];
        taken.push(o);
        bytes += o[2];
      }
      if (taken.length === 0) return null;
      const from = Math.max(start, taken[0][1]);
      const last = taken[taken.length - 1];
      const out = new Uint8Array(Math.min(end, last[1] + last[2] - 1) - from + 1);
      await Promise.all(
        taken.map(async ([sha, offset, length]) => {
          const body = await this.object(sha, `an object of pack ${index.pack.sha256}`);
          if (body.length !== length)
            throw new IntegrityError(`${objectKey(sha)}: ${body.length} bytes, but its pack's index lists ${length}`);
          const a = Math.max(from, offset);
          const b = Math.min(end, offset + length - 1);
          out.set(body.subarray(a - offset, b - offset + 1), a - from);
        }),
      );
      return out;
    };
    let first: Uint8Array | null = await batch();
    let cancelled = false;
    return new ReadableStream<Uint8Array>(
      {
        async pull(controller) {
          const chunk = first ?? (await batch());
          first = null;
          if (cancelled) return;
          if (chunk === null) controller.close();
          else controller.enqueue(chunk);
        },
        cancel() {
          cancelled = true;
          first = null;
        },
      },
      // Nothing is read ahead of the reader.
      { highWaterMark: 0 },
    );
  }

  /** Places in the pack's index of the objects this store does not hold with their listed size. */
  private async gaps(index: PackIndex, sizeOf: (path: string) => Promise<number | null>): Promise<number[]> {
    const gaps: number[] = [];
    const objects = index.objects;
    for (let i = 0; i < objects.length; i += READS_IN_FLIGHT) {
      const sizes = await Promise.all(objects.slice(i, i + READS_IN_FLIGHT).map(([sha]) => sizeOf(objectKey(sha))));
      sizes.forEach((size, j) => {
        if (size !== objects[i + j][2]) gaps.push(i + j);
      });
    }
    return gaps;
  }

  /** An object of the store, checked against its name. */
  private async object(sha: string, what: string): Promise<Uint8Array> {
    const file = await this.files.read(objectKey(sha));
    if (!file) throw new ObjectNotHeld(sha, what);
    // Hashed in place: a pack streams thousands of small objects, and an async digest (crypto.subtle)
    // per object costs more than the hashing itself.
    if (createHash('sha256').update(file.body).digest('hex') !== sha)
      throw new IntegrityError(`${objectKey(sha)} does not hash to its name`);
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

/** The place of the first object that ends after byte `start`: objects tile the pack in offset order. */
function firstEndingAfter(objects: PackedObject[], start: number): number {
  let lo = 0;
  let hi = objects.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (objects[mid][1] + objects[mid][2] <= start) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
