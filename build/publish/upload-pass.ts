// Publish's upload of objects and packs (publish.ts says in which order, and why): each pack to build
// is filled with its objects' bodies as they are read, and those the store lacks go up on the way,
// so the tree is read once more at most (the check kept the first bodies: tree-check.ts); then the
// files no pack took. One pack goes up while the next is filled.
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

  /** Builds and uploads the packs to build: one goes up while the next is filled. */
  async packs(): Promise<void> {
    let previous: Promise<void> | null = null;
    try {
      for (const { ord, ref } of this.o.ledger.packsToBuild()) {
        const body = await this.fill(ord, ref);
        if (previous) await previous;
        previous = this.pack(ref, body);
        // Awaited before the next pack goes up, or below: never left unhandled meanwhile.
        previous.catch(() => {});
      }
    } finally {
      if (previous) await previous;
    }
  }

  private async fill(ord: number, ref: PackRef): Promise<Buffer> {
    const out = Buffer.allocUnsafe(ref.size);
    await forEachLimited(this.o.ledger.packMembers(ord), this.o.concurrency, async (m) => {
      const body = await this.o.body(m);
      if (body.length !== m.size)
        throw new Error(`object ${m.sha256} has ${body.length} bytes, its pack index says ${m.size}`);
      out.set(body, m.offset);
      if (m.pending) await this.object(m, body);
    });
    this.o.ledger.packUploaded(ord);
    // Each body matched its sha256; this catches an index that does not fit them.
    if (sha256Of(out) !== ref.sha256)
      throw new Error(`pack ${ref.sha256} built from its objects does not hash to its name`);
    return out;
  }

  private async pack(ref: PackRef, body: Buffer): Promise<void> {
    await this.o.clock.put('packs', () => this.o.uploads.pack(ref.sha256, body));
    this.o.counts.packs += 1;
    this.o.counts.packBytes += body.length;
    this.o.tick();
  }

  private async object(r: ReleaseObject, body: Buffer, timed = true): Promise<void> {
    await this.o.clock.put(timed ? 'objects' : null, () => this.o.uploads.object(r.sha256, body, r.content_type));
    const c = this.o.counts;
    c.uploaded += 1;
    c.bytesUploaded += body.length;
    if (r.kind === 'shard' || r.sha256 === this.o.manifestSha) c.manifestBytesUploaded += body.length;
    this.o.tick();
  }
}
