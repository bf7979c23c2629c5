// Publish's upload of objects and packs (publish.ts says in which order, and why): each pack to build
// is filled with its objects' bodies, then goes up while those of its objects the store lacks go up
// beside it, so the tree is read once more at most (the check kept the first bodies: tree-check.ts);
// then the files no pack took.
import { createHash } from 'node:crypto';
import type { PackRef } from '../../edge/contract/packs.js';
import { forEachLimited } from '../common/concurrency.js';
import type { PhaseClock } from './phases.js';
import type { GeneratedObject, LedgerObject, PublishLedger } from './publish-ledger.js';
import type { Uploads } from './s3-uploads.js';

/** An object publish uploads: one of the release's (a shard object or a file), or one it generates. */
export type ReleaseObject = LedgerObject | GeneratedObject;

/** What went up, for the summary. */
export interface UploadCounts {
  uploaded: number;
  bytesUploaded: number;
  /** Bytes of the manifest's objects (manifest.json and shard objects). */
  manifestBytesUploaded: number;
  packs: number;
  packBytes: number;
}

export interface UploadPassOptions {
  ledger: PublishLedger;
  uploads: Uploads;
  /** A file's or shard object's bytes (checked against its sha256). */
  body: (o: LedgerObject) => Promise<Buffer>;
  clock: PhaseClock;
  concurrency: number;
  counts: UploadCounts;
  manifestSha: string;
  /** Called after each object or pack that went up. */
  tick: () => void;
}

const sha256Of = (body: Uint8Array) => createHash('sha256').update(body).digest('hex');

export class UploadPass {
  constructor(private readonly o: UploadPassOptions) {}

  /** Uploads these objects, `concurrency` at once; `timed`: as the objects phase (phases.ts), not
   * the manifest's or a recheck's. */
  async each(pages: Iterable<readonly ReleaseObject[]>, timed = true): Promise<void> {
    for (const page of pages)
      await forEachLimited(page, this.o.concurrency, async (r) => {
        const body = r.kind === 'generated' ? this.o.ledger.generatedBody(r.sha256)! : await this.o.body(r);
        await this.object(r, body, timed);
      });
  }

  /** Builds and uploads the packs to build, in order, uploading their pending objects on the way;
   * then the files still pending. */
  async all(): Promise<void> {
    await this.packs();
    await this.each(this.o.ledger.pendingObjects('file'));
  }

  /** Builds and uploads the packs to build, in order: a pack is filled from its objects' bodies
   * first, then goes up while its objects that the store lacks go up beside it (cut from the pack's
   * bytes), so the last pack is not left to go up alone at the end. Packs go up one at a time; at
   * most two wait for that, so memory holds two packs at the most. */
  async packs(): Promise<void> {
    const puts: Promise<void>[] = [];
    try {
      for (const { ord, ref } of this.o.ledger.packsToBuild()) {
        if (puts.length >= 2) await puts.shift();
        const { body, members } = await this.fill(ord, ref);
        const before = puts.at(-1);
        const put = (async () => {
          // Its failure is the previous put's own to report (awaited above or below).
          if (before) await before.catch(() => {});
          await this.pack(ref, body);
        })();
        // Awaited above or below: never left unhandled meanwhile.
        put.catch(() => {});
        puts.push(put);
        await forEachLimited(
          members.filter((m) => m.pending),
          this.o.concurrency,
          (m) => this.object(m, body.subarray(m.offset, m.offset + m.size)),
        );
        this.o.ledger.packUploaded(ord);
      }
      for (const put of puts.splice(0)) await put;
    } finally {
      // Nothing left running behind the caller's back when a put failed.
      await Promise.allSettled(puts);
    }
  }

  /** A pack's bytes, from its objects' bodies (each checked against its sha256 as it is read). */
  private async fill(ord: number, ref: PackRef) {
    const out = Buffer.allocUnsafe(ref.size);
    const members = this.o.ledger.packMembers(ord);
    await forEachLimited(members, this.o.concurrency, async (m) => {
      const body = await this.o.body(m);
      if (body.length !== m.size)
        throw new Error(`object ${m.sha256} has ${body.length} bytes, its pack index says ${m.size}`);
      out.set(body, m.offset);
    });
    // Each body matched its sha256; this catches an index that does not fit them.
    if (sha256Of(out) !== ref.sha256)
      throw new Error(`pack ${ref.sha256} built from its objects does not hash to its name`);
    return { body: out, members };
  }

  private async pack(ref: PackRef, body: Buffer): Promise<void> {
    await this.o.clock.put('packs', () => this.o.uploads.pack(ref.sha256, body));
    this.o.counts.packs += 1;
    this.o.counts.packBytes += body.length;
    this.o.tick();
  }

  private async object(r: ReleaseObject, body: Uint8Array, timed = true): Promise<void> {
    await this.o.clock.put(timed ? 'objects' : null, () => this.o.uploads.object(r.sha256, body, r.content_type));
    const c = this.o.counts;
    c.uploaded += 1;
    c.bytesUploaded += body.length;
    if (r.kind === 'shard' || r.sha256 === this.o.manifestSha) c.manifestBytesUploaded += body.length;
    this.o.tick();
  }
}
