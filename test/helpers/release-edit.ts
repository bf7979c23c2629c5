// A release database edited as a newer annotation would change it, for tests that publish a release
// after another: genes and isoforms dropped with every row keyed by them.
import type Database from 'better-sqlite3';

/** Removes these genes (with all their isoforms) and these isoforms, and every track row, gene_info row
 * and canonical choice that names them. */
export function dropRecords(db: Database.Database, drop: { genes?: string[]; isoforms?: string[] }): void {
  db.exec(`CREATE TEMP TABLE dropped_genes (gene_id TEXT PRIMARY KEY);
    CREATE TEMP TABLE dropped (transcript_id TEXT PRIMARY KEY);`);
  const gene = db.prepare('INSERT OR IGNORE INTO dropped_genes VALUES (?)');
  const isoform = db.prepare('INSERT OR IGNORE INTO dropped VALUES (?)');
  for (const id of drop.genes ?? []) gene.run(id);
  for (const id of drop.isoforms ?? []) isoform.run(id);
  db.exec(`
    INSERT OR IGNORE INTO dropped
      SELECT transcript_id FROM isoforms WHERE gene_id IN (SELECT gene_id FROM dropped_genes);
    DELETE FROM domains WHERE transcript_id IN (SELECT transcript_id FROM dropped);
    DELETE FROM neoantigens WHERE transcript_id IN (SELECT transcript_id FROM dropped);
    DELETE FROM ptm_sites WHERE transcript_id IN (SELECT transcript_id FROM dropped);
    DELETE FROM structures WHERE transcript_id IN (SELECT transcript_id FROM dropped);
    UPDATE genes SET canonical_transcript_id = NULL WHERE canonical_transcript_id IN (SELECT transcript_id FROM dropped);
    DELETE FROM isoforms WHERE transcript_id IN (SELECT transcript_id FROM dropped);
    DELETE FROM gene_info WHERE gene_id IN (SELECT gene_id FROM dropped_genes);
    DELETE FROM genes WHERE gene_id IN (SELECT gene_id FROM dropped_genes);
    DROP TABLE dropped;
    DROP TABLE dropped_genes;`);
}
