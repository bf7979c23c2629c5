// `isoatlas import core`: reference and long-read inputs → genes and isoforms of a new release
// database, one transaction per track. Inputs are named by a release config file (JSON), so a
// release is reproducible from what is written down.
//
// In bounded memory, whatever the release's size: every input streams into a staging file beside
// the release (staging.ts, staged-inputs.ts); isoforms are assembled from it a page at a time in key
// order (reference by transcript id, long reads in natural order) into staged rows; genes, names,
// HGNC ids and canonical isoforms are SQL over those rows or a gene at a time; the release tables
// are then filled from the staged rows by SQLite itself.
import { basename, dirname, resolve } from 'node:path';
import Database from 'better-sqlite3';
import { Type, type Static } from '@sinclair/typebox';
import { InputError, sha256File } from './input.js';
import { readJsonConfig } from '../common/json-config.js';
import { referenceIsoform } from './reference.js';
import { checkedTranscript, geneIdsOf, longReadIsoform, novelGene } from './long-read.js';
import { assignTranscriptNames } from './naming.js';
import { chooseCanonical, type CanonicalCandidate } from './canonical.js';
import { Staging } from './staging.js';
import { firstUnmatched, lookups, stageSet, transcriptPages, type StagedSet } from './staged-inputs.js';
import { naturalOrder } from './natural-order.js';
import type { GeneRecord, IsoformRecord } from '../release-db/records.js';
import { checkNewDbPath, createReleaseDb, type Db } from '../release-db/database.js';
import { DDL } from '../release-db/schema.js';

const InputSet = Type.Object(
  {
    gtf: Type.String(),
    classification: Type.Optional(Type.String()),
    fasta: Type.Optional(Type.String()),
    /** genePred-extended file of the same transcripts: the annotation's own CDS (reference set only). */
    gene_pred: Type.Optional(Type.String()),
    source: Type.String(),
    version: Type.Optional(Type.String()),
    description: Type.Optional(Type.String()),
    /** The inputs are synthetic (e.g. `isoatlas generate --scale human`): recorded as generated. */
    generated: Type.Optional(Type.Boolean()),
    /** What the classification's iso_exp (TPM) quantifies, as each isoform's expression_source says
     * it; default "<source>: SQANTI3 iso_exp". */
    expression: Type.Optional(Type.String({ minLength: 1 })),
  },
  { additionalProperties: false },
);
export const CoreConfigSchema = Type.Object(
  {
    release: Type.String({ pattern: '^[A-Za-z0-9][A-Za-z0-9._-]*$' }),
    date: Type.String({ pattern: '^\\d{4}-\\d{2}-\\d{2}$' }),
    title: Type.String(),
    assembly: Type.String(),
    /** What the release covers, in a sentence (release metadata; 404s point to it). */
    coverage: Type.Optional(Type.String({ minLength: 1 })),
    reference: InputSet,
    long_read: Type.Optional(Type.Intersect([InputSet, Type.Object({ classification: Type.String() })])),
  },
  { additionalProperties: false },
);
export type CoreConfig = Static<typeof CoreConfigSchema>;

/** Reads a release config; input paths in it are relative to the config file. */
export function loadCoreConfig(path: string): CoreConfig {
  const config = readJsonConfig<CoreConfig>(path, CoreConfigSchema, 'release config');
  const base = dirname(resolve(path));
  const fix = (set: { gtf: string; classification?: string; fasta?: string; gene_pred?: string }) => {
    set.gtf = resolve(base, set.gtf);
    if (set.classification) set.classification = resolve(base, set.classification);
    if (set.fasta) set.fasta = resolve(base, set.fasta);
    if (set.gene_pred) set.gene_pred = resolve(base, set.gene_pred);
  };
  fix(config.reference);
  if (config.long_read) fix(config.long_read);
  return config;
}

export interface CoreSummary {
  genes: number;
  referenceIsoforms: number;
  longReadIsoforms: number;
  novelGenes: number;
  longReadGtfOnly: number;
  warnings: string[];
}

const GENE_COLUMNS = [
  'gene_id',
  'gene_id_versioned',
  'symbol',
  'biotype',
  'source',
  'chromosome',
  'strand',
  'start',
  'end',
  'canonical_transcript_id',
  'canonical_rule',
  'hgnc_id',
] as const;
const ISOFORM_COLUMNS = [
  'transcript_id',
  'transcript_id_unversioned',
  'transcript_name',
  'transcript_name_source',
  'gene_id',
  'source',
  'transcript_type',
  'structural_category',
  'associated_transcript',
  'associated_genes',
  'chromosome',
  'strand',
  'start',
  'end',
  'length',
  'exon_count',
  'coding',
  'protein_length',
  'protein_sequence',
  'nmd',
  'nmd_source',
  'expression_tpm',
  'expression_source',
  'tags',
  'exons',
  'orf_start',
  'orf_end',
  'orf_transcript_start',
  'orf_transcript_end',
  'orf_completeness',
  'orf_source',
  'reference_cds',
  'qc',
] as const;

function insertStatement(db: Db, table: string, columns: readonly string[]) {
  return db.prepare(
    `INSERT INTO ${table} (${columns.map((c) => `"${c}"`).join(', ')}) VALUES (${columns.map((c) => `@${c}`).join(', ')})`,
  );
}

function toRow(iso: IsoformRecord) {
  const bool = (b: boolean | null) => (b === null ? null : b ? 1 : 0);
  const { orf, reference_cds, ...rest } = iso;
  return {
    ...rest,
    associated_genes: JSON.stringify(iso.associated_genes),
    tags: JSON.stringify(iso.tags),
    coding: bool(iso.coding),
    nmd: bool(iso.nmd),
    exons: JSON.stringify(iso.exons),
    orf_start: orf?.start ?? null,
    orf_end: orf?.end ?? null,
    orf_transcript_start: orf?.transcript_start ?? null,
    orf_transcript_end: orf?.transcript_end ?? null,
    orf_completeness: orf?.completeness ?? null,
    orf_source: orf?.source ?? null,
    reference_cds: reference_cds ? JSON.stringify(reference_cds) : null,
    qc: iso.qc ? JSON.stringify(iso.qc) : null,
  };
}

async function recordSources(db: Db, track: string, set: CoreConfig['reference'], records: number) {
  const insert = db.prepare(
    'INSERT INTO track_sources (track, source, version, generated, description, input_file, input_sha256, records) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
  );
  for (const file of [set.gtf, set.classification, set.fasta, set.gene_pred]) {
    if (file)
      insert.run(
        track,
        set.source,
        set.version ?? null,
        set.generated ? 1 : 0,
        set.description ?? null,
        basename(file),
        await sha256File(file),
        records,
      );
  }
}

/** Staged rows of the release's genes and isoforms, typed as the release's own columns so that
 * copying them changes no value. */
function createRowTables(staging: Staging) {
  const schema = new Database(':memory:');
  const columns = (table: string) =>
    (schema.pragma(`table_info(${table})`) as { name: string; type: string }[])
      .map((c) => `"${c.name}" ${c.type}`)
      .join(', ');
  try {
    schema.exec(DDL);
    staging.db.exec(`
      CREATE TABLE iso_rows (seq INTEGER PRIMARY KEY, ${columns('isoforms')});
      CREATE TABLE gene_rows (${columns('genes')}, PRIMARY KEY (gene_id));
    `);
  } finally {
    schema.close();
  }
}

type SetConfig = CoreConfig['reference'];

const expressionSourceOf = (set: SetConfig) =>
  set.classification ? (set.expression ?? `${set.source}: SQANTI3 iso_exp`) : null;

/** Reference isoforms into iso_rows, in transcript id order; reference genes into gene_rows. */
function stageReference(staging: Staging, set: StagedSet, config: SetConfig): number {
  const { db } = staging;
  const { gtf, classification, fasta, gene_pred } = set.files;
  const transcripts = { table: 'transcripts', key: 'transcript_id' } as const;
  if (classification) {
    const u = firstUnmatched(staging, set, 'classification', transcripts);
    if (u) throw new InputError(classification, u.line, `isoform ${u.id} is not a transcript of ${gtf}`, 'isoform');
  }
  if (fasta) {
    const u = firstUnmatched(staging, set, 'fasta', transcripts);
    if (u) throw new InputError(fasta, null, `sequence ${u.id} is not a transcript of ${gtf}`);
  }
  if (gene_pred) {
    const u = firstUnmatched(staging, set, 'gene_pred', transcripts);
    if (u) throw new InputError(gene_pred, u.line, `transcript ${u.id} is not a transcript of ${gtf}`);
  }
  const context = {
    gtfHasCds: db.prepare(`SELECT EXISTS (SELECT 1 FROM ${set.name}_features WHERE kind = 1)`).pluck().get() === 1,
    classificationFile: classification ?? null,
    hasFasta: Boolean(fasta),
    expressionSource: expressionSourceOf(config),
  };
  const insert = insertStatement(db, 'iso_rows', ISOFORM_COLUMNS);
  const writer = staging.writer();
  let n = 0;
  for (const page of transcriptPages(staging, set)) {
    const genePred = gene_pred ? { file: gene_pred, transcripts: page.genePred } : null;
    for (const t of page.transcripts) {
      const iso = referenceIsoform(t, page.classification.get(t.transcriptId), page.fasta.get(t.transcriptId) ?? null, {
        ...context,
        genePred,
      });
      writer.run(insert, toRow(iso));
      n += 1;
    }
  }
  writer.commit();

  // A gene is described by its first transcript (in id order) and its gene line; without a gene line,
  // it spans the transcripts that have none.
  const p = set.name;
  db.exec(`
    INSERT INTO gene_rows (gene_id, gene_id_versioned, symbol, biotype, source, chromosome, strand, start, "end")
    SELECT f.unv,
      CASE WHEN t.gene_id = f.unv THEN NULL ELSE t.gene_id END,
      coalesce(g.gene_name, t.gene_name, f.unv),
      coalesce(g.gene_type, t.gene_type),
      'reference',
      coalesce(g.chromosome, t.chromosome),
      coalesce(g.strand, t.strand),
      CASE WHEN g.gene_id IS NULL THEN f.free_start ELSE min(g.start, coalesce(f.free_start, g.start)) END,
      CASE WHEN g.gene_id IS NULL THEN f.free_end ELSE max(g."end", coalesce(f.free_end, g."end")) END
    FROM (SELECT t.gene_unv AS unv, min(t.transcript_id) AS first,
            min(CASE WHEN x.gene_id IS NULL THEN t.start END) AS free_start,
            max(CASE WHEN x.gene_id IS NULL THEN t."end" END) AS free_end
          FROM ${p}_transcripts t LEFT JOIN ${p}_genes x ON x.gene_id = t.gene_id GROUP BY t.gene_unv) f
    JOIN ${p}_transcripts t ON t.transcript_id = f.first
    LEFT JOIN ${p}_genes g ON g.gene_id = t.gene_id
    ORDER BY f.unv;
  `);
  return n;
}

/** Long-read isoforms into iso_rows, in natural id order; their novel loci into gene_rows. Returns
 * their count and how many GTF transcripts have no classification row. */
function stageLongRead(staging: Staging, set: StagedSet, config: SetConfig): { count: number; gtfOnly: number } {
  const { db } = staging;
  const files = { gtf: set.files.gtf, classification: set.files.classification! };
  if (set.files.fasta) {
    const u = firstUnmatched(staging, set, 'fasta', { table: 'classification', key: 'isoform' });
    if (u) throw new InputError(set.files.fasta, null, `sequence ${u.id} is not an isoform of ${files.classification}`);
  }
  const look = lookups(staging, set);
  const sourceOf = db.prepare('SELECT source FROM gene_rows WHERE gene_id = ?').pluck();
  const gene = db.prepare(
    `INSERT INTO gene_rows (gene_id, gene_id_versioned, symbol, biotype, source, chromosome, strand, start, "end")
     VALUES (@gene_id, @gene_id_versioned, @symbol, @biotype, @source, @chromosome, @strand, @start, @end)
     ON CONFLICT (gene_id) DO UPDATE SET start = min(start, excluded.start), "end" = max("end", excluded."end")`,
  );
  const insert = insertStatement(db, 'iso_rows', ISOFORM_COLUMNS);
  const context = { classificationFile: files.classification, expressionSource: expressionSourceOf(config) };
  const writer = staging.writer();
  let count = 0;
  for (const ids of naturalOrder(staging, `${set.name}_classification`, 'isoform', 'rowid')) {
    for (const id of ids) {
      const row = look.classification(id);
      const t = checkedTranscript(row, look.transcript(id), files);
      let geneId = geneIdsOf(row.associatedGene).find((g) => sourceOf.get(g) === 'reference');
      if (!geneId) {
        const novel: GeneRecord = novelGene(row, t);
        writer.run(gene, novel);
        geneId = novel.gene_id;
      }
      writer.run(insert, toRow(longReadIsoform(row, t, geneId, look.fasta(id), context)));
      count += 1;
    }
  }
  writer.commit();
  const gtfOnly = db
    .prepare(
      `SELECT count(*) FROM ${set.name}_transcripts t
       WHERE NOT EXISTS (SELECT 1 FROM ${set.name}_classification c WHERE c.isoform = t.transcript_id)`,
    )
    .pluck()
    .get() as number;
  return { count, gtfOnly };
}

/** The HGNC id GENCODE gives each gene: on its last gene line that has one, else on its last
 * transcript line that has one. */
function setHgncIds(staging: Staging, reference: StagedSet) {
  const p = reference.name;
  staging.db.exec(`
    UPDATE gene_rows SET hgnc_id = coalesce(
      (SELECT hgnc_id FROM ${p}_genes g WHERE g.gene_unv = gene_rows.gene_id AND g.hgnc_id IS NOT NULL
       ORDER BY g.line DESC LIMIT 1),
      (SELECT hgnc_id FROM ${p}_transcripts t WHERE t.gene_unv = gene_rows.gene_id AND t.hgnc_id IS NOT NULL
       ORDER BY t.line DESC LIMIT 1));
  `);
}

interface CandidateRow {
  gene_id: string;
  transcript_id: string;
  tags: string;
  reference_cds: string | null;
  exons: string;
  coding: number | null;
  protein_length: number | null;
  length: number;
  orf_completeness: string | null;
}

/** Each gene's canonical isoform, one gene's reference isoforms at a time. */
function setCanonicals(staging: Staging) {
  const { db } = staging;
  db.exec('CREATE INDEX iso_rows_by_gene ON iso_rows (source, gene_id, transcript_id)');
  const update = db.prepare('UPDATE gene_rows SET canonical_transcript_id = ?, canonical_rule = ? WHERE gene_id = ?');
  const writer = staging.writer();
  let gene: string | null = null;
  let candidates: CanonicalCandidate[] = [];
  const decide = () => {
    const choice = gene === null ? null : chooseCanonical(candidates);
    if (choice) writer.run(update, choice.transcriptId, choice.rule, gene);
    candidates = [];
  };
  for (const page of staging.pages<CandidateRow>(
    (after) =>
      `SELECT gene_id, transcript_id, tags, reference_cds, exons, coding, protein_length, length, orf_completeness
       FROM iso_rows WHERE source = 'reference' ${after ? 'AND (gene_id, transcript_id) > (@gene, @transcript)' : ''}
       ORDER BY gene_id, transcript_id LIMIT @limit`,
    (row) => ({ gene: row.gene_id, transcript: row.transcript_id }),
  )) {
    for (const row of page) {
      if (row.gene_id !== gene) {
        decide();
        gene = row.gene_id;
      }
      candidates.push({
        transcript_id: row.transcript_id,
        source: 'reference',
        tags: JSON.parse(row.tags) as string[],
        reference_cds: row.reference_cds === null ? null : JSON.parse(row.reference_cds),
        exons: JSON.parse(row.exons) as [number, number][],
        coding: row.coding === null ? null : row.coding === 1,
        protein_length: row.protein_length,
        length: row.length,
        orf: row.orf_completeness === null ? null : { completeness: row.orf_completeness },
      });
    }
  }
  decide();
  writer.commit();
}

export interface CoreImportOptions {
  /** Rows per staged write transaction and per page read back (staging.ts DEFAULT_BATCH_ROWS). */
  batchRows?: number;
}

export async function importCore(
  config: CoreConfig,
  outPath: string,
  options: CoreImportOptions = {},
): Promise<CoreSummary> {
  checkNewDbPath(outPath);
  const staging = new Staging(outPath, options.batchRows);
  try {
    const reference = await stageSet(staging, 'ref', config.reference);
    const longRead = config.long_read ? await stageSet(staging, 'lr', config.long_read) : null;
    createRowTables(staging);
    const referenceIsoforms = stageReference(staging, reference, config.reference);
    const lr = longRead ? stageLongRead(staging, longRead, config.long_read!) : { count: 0, gtfOnly: 0 };
    assignTranscriptNames(staging);
    setHgncIds(staging, reference);
    setCanonicals(staging);
    const count = (sql: string) => staging.db.prepare(sql).pluck().get() as number;
    const genes = count('SELECT count(*) FROM gene_rows');
    const novelGenes = count("SELECT count(*) FROM gene_rows WHERE source = 'long_read'");

    await createReleaseDb(outPath, async (db) => {
      const meta = db.prepare('INSERT INTO release_meta (key, value) VALUES (?, ?)');
      for (const key of ['release', 'date', 'title', 'assembly'] as const) meta.run(key, config[key]);
      if (config.coverage) meta.run('coverage', config.coverage);

      db.prepare('ATTACH DATABASE ? AS staging').run(staging.path);
      try {
        const copy = (table: string, columns: readonly string[], from: string, source: string, order: string) => {
          const list = columns.map((c) => `"${c}"`).join(', ');
          db.exec(
            `INSERT INTO ${table} (${list}) SELECT ${list} FROM staging.${from} WHERE source = '${source}' ORDER BY ${order}`,
          );
        };
        // Reference isoforms before their genes: while a deferred foreign key is pending, every new
        // parent row makes SQLite search its child table, and genes.canonical_transcript_id has no
        // index (a scan of all genes per isoform), while isoforms.gene_id has one.
        db.transaction(() => {
          copy('isoforms', ISOFORM_COLUMNS, 'iso_rows', 'reference', 'seq');
          copy('genes', GENE_COLUMNS, 'gene_rows', 'reference', 'gene_id');
        })();
        await recordSources(db, 'reference', config.reference, referenceIsoforms);
        if (config.long_read) {
          // Novel loci have no canonical isoform, so here genes go first and nothing is left pending.
          db.transaction(() => {
            copy('genes', GENE_COLUMNS, 'gene_rows', 'long_read', 'gene_id');
            copy('isoforms', ISOFORM_COLUMNS, 'iso_rows', 'long_read', 'seq');
          })();
          await recordSources(db, 'long_read', config.long_read, lr.count);
        }
      } finally {
        db.exec('DETACH DATABASE staging');
      }
    });

    return {
      genes,
      referenceIsoforms,
      longReadIsoforms: lr.count,
      novelGenes,
      longReadGtfOnly: lr.gtfOnly,
      warnings: [
        ...reference.warnings,
        ...(longRead?.warnings ?? []),
        ...(lr.gtfOnly
          ? [`${config.long_read!.gtf}: ${lr.gtfOnly} transcripts have no classification row and were skipped`]
          : []),
      ],
    };
  } finally {
    staging.close();
  }
}
