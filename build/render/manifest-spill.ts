// The manifest entries of a build, gathered as files are written: a scratch table rather than an
// array, since a large release has millions. The shard count depends on the total, known only at
// the end, so each entry is filed under its finest shard (scratch.ts, bucketOf) and grouped by its
// shard once the count is known.
import type { ManifestEntry } from '../../edge/contract/tree.js';
import type { ManifestSource } from './manifest.js';
import { bucketOf, type Scratch, type Spill } from './scratch.js';

export class ManifestSpill implements ManifestSource {
  files = 0;
  bytes = 0;
  private readonly rows: Spill;

  constructor(private readonly scratch: Scratch) {
    scratch.db.exec(
      'CREATE TABLE manifest (bucket INTEGER NOT NULL, path TEXT NOT NULL, size INTEGER NOT NULL, sha256 TEXT NOT NULL, content_type TEXT NOT NULL)',
    );
    this.rows = scratch.spill('INSERT INTO manifest (bucket, path, size, sha256, content_type) VALUES (?, ?, ?, ?, ?)');
  }

  add(e: ManifestEntry): void {
    this.rows.add(bucketOf(e.path), e.path, e.size, e.sha256, e.content_type);
    this.files += 1;
    this.bytes += e.size;
  }

  *byShard(count: number): Iterable<[number, ManifestEntry]> {
    this.rows.flush();
    this.scratch.sorting();
    const rows = this.scratch.db
      .prepare('SELECT bucket & ? AS shard, path, size, sha256, content_type FROM manifest ORDER BY shard')
      .raw()
      .iterate(count - 1) as Iterable<[number, string, number, string, string]>;
    for (const [shard, path, size, sha256, content_type] of rows) yield [shard, { path, size, sha256, content_type }];
  }
}
