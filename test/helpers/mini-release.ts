// A release database in memory with one gene and the given coding isoforms (transcript id →
// protein sequence): enough for importers to validate and insert track records against.
import Database from 'better-sqlite3';
import { DDL } from '../../build/release-db/schema.js';

export function miniRelease(
  proteins: Record<string, string>,
  gene = { id: 'ENSG00000000001', symbol: 'TEST1' },
): Database.Database {
  const db = new Database(':memory:');
  db.exec(DDL);
  db.prepare(
    `INSERT INTO genes (gene_id, symbol, source, chromosome, strand, start, end) VALUES (?, ?, 'reference', 'chr22', '+', 1, 100000)`,
  ).run(gene.id, gene.symbol);
  const insert = db.prepare(
    `INSERT INTO isoforms (transcript_id, transcript_id_unversioned, transcript_name, transcript_name_source, gene_id, source,
       chromosome, strand, start, end, length, exon_count, coding, protein_length, protein_sequence)
     VALUES (?, ?, ?, 'generated', ?, 'reference', 'chr22', '+', 1, 100000, ?, 5, 1, ?, ?)`,
  );
  Object.entries(proteins).forEach(([id, protein], i) =>
    insert.run(
      id,
      /^ENST\d+\.\d+$/.test(id) ? id.split('.')[0] : null,
      `${gene.symbol}-${201 + i}`,
      gene.id,
      protein.length * 3 + 3,
      protein.length,
      protein,
    ),
  );
  return db;
}
