// Writes the rendered tree and records every file for the manifest. Files go to disk in batches
// through a worker thread (file-batches.ts), so the render goes on while they are written and a
// file costs no round trips of its own. Each file's manifest entry goes to `record`: by default the
// `entries` array, for a large tree a spill (manifest-spill.ts).
import { createHash } from 'node:crypto';
import { contentTypeOf, SAFE_ID, type ManifestEntry } from '../../edge/contract/tree.js';
import { FileBatches } from './file-batches.js';

export type { ManifestEntry };

export class TreeWriter {
  readonly entries: ManifestEntry[] = [];
  private readonly record: (entry: ManifestEntry) => void;
  private readonly out: FileBatches;
  files = 0;
  bytes = 0;

  constructor(
    readonly root: string,
    opts: { record?: (entry: ManifestEntry) => void; batchBytes?: number } = {},
  ) {
    this.record = opts.record ?? ((entry) => this.entries.push(entry));
    this.out = new FileBatches(root, opts.batchBytes);
  }

  /** Checks an identifier before it becomes part of a file name. */
  static safeId(id: string): string {
    if (!SAFE_ID.test(id))
      throw new Error(`identifier "${id}" cannot be a file name in the tree (allowed: ${SAFE_ID})`);
    return id;
  }

  /** Writes `body` as JSON. A write that fails rejects this or a later call, and flush(), with an
   * error naming its path. */
  json(path: string, body: unknown): Promise<void> {
    return this.put(path, JSON.stringify(body));
  }

  bytesAt(path: string, data: Uint8Array): Promise<void> {
    return this.put(path, data);
  }

  private put(path: string, content: string | Uint8Array): Promise<void> {
    return this.out.put(path, content, (data) => {
      const sha256 = createHash('sha256').update(data).digest('hex');
      this.record({ path, size: data.length, sha256, content_type: contentTypeOf(path) });
      this.files += 1;
      this.bytes += data.length;
    });
  }

  /** Waits for every write; rejects with the first that failed. */
  flush(): Promise<void> {
    return this.out.flush();
  }

  /** Stops writing: once this resolves nothing more reaches the tree (a failed render removes it). */
  close(): Promise<void> {
    return this.out.close();
  }
}
