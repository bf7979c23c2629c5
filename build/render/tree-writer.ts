// Writes the rendered tree and records every file for the manifest. Writes are asynchronous with a
// bound on how many are in flight, so large releases neither serialize on disk latency nor open
// thousands of files at once. Each file's manifest entry goes to `record`: by default the `entries`
// array, for a large tree a spill (manifest-spill.ts).
import { createHash } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { contentTypeOf, SAFE_ID, type ManifestEntry } from '../../edge/contract/tree.js';

export type { ManifestEntry };

/** Directories remembered as made: files are written in key order, so the recent ones are the ones
 * written to again; forgetting older ones costs a mkdir, remembering all grows with the tree. */
const REMEMBERED_DIRS = 4096;

export class TreeWriter {
  readonly entries: ManifestEntry[] = [];
  private readonly record: (entry: ManifestEntry) => void;
  private readonly inFlight = new Set<Promise<void>>();
  private madeDirs = new Set<string>();
  /** The first write that failed: the next json()/bytesAt() and flush() reject with it, so the
   * render stops and cleans its staging directory instead of an unhandled rejection. */
  private failure: Error | null = null;
  files = 0;
  bytes = 0;

  constructor(
    readonly root: string,
    private readonly concurrency = 64,
    record?: (entry: ManifestEntry) => void,
  ) {
    this.record = record ?? ((entry) => this.entries.push(entry));
  }

  /** Checks an identifier before it becomes part of a file name. */
  static safeId(id: string): string {
    if (!SAFE_ID.test(id))
      throw new Error(`identifier "${id}" cannot be a file name in the tree (allowed: ${SAFE_ID})`);
    return id;
  }

  async json(path: string, body: unknown): Promise<void> {
    await this.bytesAt(path, Buffer.from(JSON.stringify(body), 'utf8'));
  }

  async bytesAt(path: string, data: Buffer): Promise<void> {
    if (this.failure) throw this.failure;
    const sha256 = createHash('sha256').update(data).digest('hex');
    this.record({ path, size: data.length, sha256, content_type: contentTypeOf(path) });
    this.files += 1;
    this.bytes += data.length;
    while (this.inFlight.size >= this.concurrency) await Promise.race(this.inFlight);
    const write = this.write(path, data)
      .catch((err: NodeJS.ErrnoException) => {
        this.failure ??= new Error(`cannot write ${path} into ${this.root}: ${err.code ?? err.message}`);
      })
      .finally(() => this.inFlight.delete(write));
    this.inFlight.add(write);
  }

  private async write(path: string, data: Buffer) {
    const full = join(this.root, path);
    const dir = dirname(full);
    if (!this.madeDirs.has(dir)) {
      await mkdir(dir, { recursive: true });
      if (this.madeDirs.size >= REMEMBERED_DIRS) this.madeDirs = new Set();
      this.madeDirs.add(dir);
    }
    await writeFile(full, data);
  }

  /** Waits for every write; rejects with the first that failed. */
  async flush(): Promise<void> {
    await Promise.all(this.inFlight);
    if (this.failure) throw this.failure;
  }
}
