// Transcript names. The GTF's transcript_name is used where present. Otherwise names are generated
// deterministically, in the style of Ensembl but never colliding with it:
//   reference isoforms: SYMBOL-201, SYMBOL-202, … numbered per symbol in (gene id, transcript id) order;
//   long-read isoforms: SYMBOL-LR1, SYMBOL-LR2, … numbered per symbol in natural PB id order.
// Numbering is per symbol, not per gene, so genes sharing a symbol (Y_RNA) still get unique names.
// Names are unique case-insensitively across the release, because the API resolves them in any case.
// The names are assigned over the staged isoforms and genes (core.ts): taken names are a staging
// table keyed by their lower-case form, and the unnamed isoforms are visited in naming order a page
// at a time.
import { BadInputError } from '../common/errors.js';
import type { Staging } from './staging.js';

export class NamingError extends BadInputError {}

/** Names the staged isoforms (`iso_rows`, in `seq` order: reference by transcript id, then long-read
 * in natural order) that have none, numbering per symbol of their gene (`gene_rows`). */
export function assignTranscriptNames(staging: Staging): void {
  const { db } = staging;
  db.exec('CREATE TABLE taken_names (key TEXT PRIMARY KEY, transcript_id TEXT NOT NULL) WITHOUT ROWID');
  const insert = db.prepare('INSERT INTO taken_names VALUES (?, ?) ON CONFLICT DO NOTHING');
  const holder = db.prepare('SELECT transcript_id FROM taken_names WHERE key = ?').pluck();
  const writer = staging.writer();
  const claim = (name: string, transcriptId: string) => {
    const key = name.toLowerCase();
    if (writer.run(insert, key, transcriptId).changes === 0) {
      throw new NamingError(
        `transcript name "${name}" is used by both ${holder.get(key)} and ${transcriptId}; transcript names must be unique (case-insensitively)`,
      );
    }
  };
  const taken = (name: string) => holder.get(name.toLowerCase()) !== undefined;
  try {
    for (const page of staging.pages<{ seq: number; transcript_id: string; transcript_name: string }>(
      (after) =>
        `SELECT seq, transcript_id, transcript_name FROM iso_rows WHERE transcript_name IS NOT NULL ${after ? 'AND seq > @seq' : ''} ORDER BY seq LIMIT @limit`,
      (row) => ({ seq: row.seq }),
    ))
      for (const iso of page) claim(iso.transcript_name, iso.transcript_id);

    // Naming order: by source and symbol; reference isoforms by (gene id, transcript id), long reads
    // in their (natural) seq order. Materialised as row ids so it can be paged.
    db.exec(`CREATE TABLE unnamed (ord INTEGER PRIMARY KEY, seq INTEGER NOT NULL, transcript_id TEXT NOT NULL,
               source TEXT NOT NULL, symbol TEXT NOT NULL);
             INSERT INTO unnamed (seq, transcript_id, source, symbol)
             SELECT i.seq, i.transcript_id, i.source, g.symbol FROM iso_rows i JOIN gene_rows g ON g.gene_id = i.gene_id
             WHERE i.transcript_name IS NULL
             ORDER BY i.source, g.symbol, CASE WHEN i.source = 'reference' THEN i.gene_id END,
               CASE WHEN i.source = 'reference' THEN i.transcript_id END, i.seq;`);
    const name = db.prepare(
      "UPDATE iso_rows SET transcript_name = ?, transcript_name_source = 'generated' WHERE seq = ?",
    );
    let group = '';
    let n = 0;
    for (const page of staging.pages<{
      ord: number;
      seq: number;
      transcript_id: string;
      source: string;
      symbol: string;
    }>(
      (after) => `SELECT * FROM unnamed ${after ? 'WHERE ord > @ord' : ''} ORDER BY ord LIMIT @limit`,
      (row) => ({ ord: row.ord }),
    )) {
      for (const iso of page) {
        const isReference = iso.source === 'reference';
        const key = `${iso.source}\u0000${iso.symbol}`;
        if (key !== group) [group, n] = [key, isReference ? 201 : 1];
        let generated: string;
        do generated = isReference ? `${iso.symbol}-${n++}` : `${iso.symbol}-LR${n++}`;
        while (taken(generated));
        claim(generated, iso.transcript_id);
        writer.run(name, generated, iso.seq);
      }
    }
    writer.commit();
  } finally {
    writer.abandon();
  }
}
