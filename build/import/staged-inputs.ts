// One input set of a core import (GTF, classification, protein FASTA, genePred) streamed into staging
// tables (staging.ts), with the checks that need a whole file done as SQL over them, and read back in
// transcript id order a page at a time: transcripts with their structure, and the rows of the other
// files that name them.
import { InputError } from './input.js';
import {
  NO_TRANSCRIPTS,
  addFeature,
  emptySummary,
  gtfEvents,
  oneExonIfNone,
  overlapProblem,
  setStructure,
  type FeatureKind,
  type FeatureSummary,
  type GtfTranscript,
} from './gtf.js';
import { sqantiRows, type SqantiRow } from './sqanti.js';
import { proteinRecords } from './fasta.js';
import { genePredEntries, type GenePredTranscript } from './gene-pred.js';
import type { Staging } from './staging.js';
import { unversioned } from '../release-db/records.js';

export type SetName = 'ref' | 'lr';

export interface SetFiles {
  gtf: string;
  classification?: string;
  fasta?: string;
  gene_pred?: string;
}

/** What a staged set holds: its tables are `<name>_…`. */
export interface StagedSet {
  name: SetName;
  files: SetFiles;
  warnings: string[];
}

const FEATURE_KINDS: Record<FeatureKind, number> = { exon: 0, CDS: 1, start_codon: 2, stop_codon: 3 };

function createTables(staging: Staging, p: SetName) {
  staging.db.exec(`
    CREATE TABLE ${p}_genes (
      gene_id TEXT PRIMARY KEY, gene_unv TEXT NOT NULL, gene_name TEXT, gene_type TEXT, hgnc_id TEXT,
      chromosome TEXT NOT NULL, strand TEXT NOT NULL, start INTEGER NOT NULL, end INTEGER NOT NULL,
      line INTEGER NOT NULL);
    CREATE TABLE ${p}_transcripts (
      transcript_id TEXT PRIMARY KEY, gene_id TEXT NOT NULL, gene_unv TEXT NOT NULL, gene_name TEXT,
      gene_type TEXT, transcript_type TEXT, transcript_name TEXT, protein_id TEXT, hgnc_id TEXT,
      tags TEXT NOT NULL, chromosome TEXT NOT NULL, strand TEXT NOT NULL, start INTEGER NOT NULL,
      end INTEGER NOT NULL, line INTEGER NOT NULL);
    CREATE TABLE ${p}_features (transcript_id TEXT NOT NULL, kind INTEGER NOT NULL, start INTEGER NOT NULL,
      end INTEGER NOT NULL, phase INTEGER, line INTEGER NOT NULL);
    CREATE TABLE ${p}_classification (isoform TEXT PRIMARY KEY, data TEXT NOT NULL, line INTEGER NOT NULL);
    CREATE TABLE ${p}_fasta (id TEXT PRIMARY KEY, sequence TEXT NOT NULL, stop INTEGER NOT NULL, line INTEGER NOT NULL);
    CREATE TABLE ${p}_gene_pred (name TEXT PRIMARY KEY, data TEXT NOT NULL, line INTEGER NOT NULL);
  `);
}

/** Streams the GTF into `<p>_genes`, `<p>_transcripts` and `<p>_features`; then the checks of the
 * whole file, in the order an in-memory reader (gtf.ts readGtf) meets them. Returns its warnings. */
async function stageGtf(staging: Staging, p: SetName, path: string): Promise<string[]> {
  const { db } = staging;
  const writer = staging.writer();
  const gene = db.prepare(
    `INSERT INTO ${p}_genes VALUES (@geneId, @unv, @geneName, @geneType, @hgncId, @chromosome, @strand, @start, @end, @line) ON CONFLICT DO NOTHING`,
  );
  const transcript = db.prepare(
    `INSERT INTO ${p}_transcripts VALUES (@transcriptId, @geneId, @unv, @geneName, @geneType, @transcriptType,
      @transcriptName, @proteinId, @hgncId, @tagsJson, @chromosome, @strand, @start, @end, @line) ON CONFLICT DO NOTHING`,
  );
  const firstLine = db.prepare(`SELECT line FROM ${p}_transcripts WHERE transcript_id = ?`).pluck();
  const feature = db.prepare(`INSERT INTO ${p}_features VALUES (?, ?, ?, ?, ?, ?)`);
  for await (const event of gtfEvents(path)) {
    if (event.kind === 'gene') {
      const g = event.gene;
      if (writer.run(gene, { ...g, unv: unversioned(g.geneId), line: event.line }).changes === 0)
        throw new InputError(path, event.line, `duplicate gene id ${g.geneId}`);
    } else if (event.kind === 'transcript') {
      const t = event.transcript;
      const row = { ...t, unv: unversioned(t.geneId), tagsJson: JSON.stringify(t.tags) };
      if (writer.run(transcript, row).changes === 0)
        throw new InputError(
          path,
          event.line,
          `duplicate transcript id ${t.transcriptId} (first defined at line ${firstLine.get(t.transcriptId)})`,
        );
    } else {
      const { transcriptId, start, end, phase, line } = event;
      writer.run(feature, transcriptId, FEATURE_KINDS[event.feature], start, end, phase, line);
    }
  }
  writer.commit();
  db.exec(`
    CREATE INDEX ${p}_features_by_transcript ON ${p}_features (transcript_id, kind, start, line);
    CREATE INDEX ${p}_transcripts_by_gene ON ${p}_transcripts (gene_unv, line);
    CREATE INDEX ${p}_genes_by_gene ON ${p}_genes (gene_unv, line);
  `);

  // Features of a transcript that has no transcript line, or exons that overlap: the one reported is
  // that of the transcript whose features begin first in the file.
  const orphan = db
    .prepare(
      `SELECT transcript_id AS id, min(line) AS first FROM ${p}_features f
       WHERE NOT EXISTS (SELECT 1 FROM ${p}_transcripts t WHERE t.transcript_id = f.transcript_id)
       GROUP BY transcript_id ORDER BY first LIMIT 1`,
    )
    .get() as { id: string; first: number } | undefined;
  const overlap = db
    .prepare(
      `SELECT o.transcript_id AS id, o.ps, o.pe, o.s, o.e,
         (SELECT min(line) FROM ${p}_features x WHERE x.transcript_id = o.transcript_id) AS first
       FROM (SELECT transcript_id, start AS s, end AS e, line,
               lag(start) OVER w AS ps, lag(end) OVER w AS pe
             FROM ${p}_features WHERE kind = 0
             WINDOW w AS (PARTITION BY transcript_id ORDER BY start, line)) o
       WHERE o.s <= o.pe ORDER BY first, o.s, o.line LIMIT 1`,
    )
    .get() as { id: string; ps: number; pe: number; s: number; e: number; first: number } | undefined;
  if (orphan && (!overlap || orphan.first <= overlap.first))
    throw new InputError(path, orphan.first, `exon of transcript ${orphan.id}, which has no transcript line`);
  if (overlap)
    throw new InputError(
      path,
      overlap.first,
      overlapProblem(overlap.id, [overlap.ps, overlap.pe], [overlap.s, overlap.e]),
    );

  const warnings: string[] = [];
  const noExons = db.prepare(
    `SELECT * FROM ${p}_transcripts t
     WHERE NOT EXISTS (SELECT 1 FROM ${p}_features f WHERE f.transcript_id = t.transcript_id AND f.kind = 0)
     ORDER BY line`,
  );
  for (const row of noExons.iterate() as Iterable<TranscriptRow>)
    warnings.push(oneExonIfNone(path, toTranscript(row))!);
  if (!db.prepare(`SELECT 1 FROM ${p}_transcripts LIMIT 1`).get()) throw new InputError(path, null, NO_TRANSCRIPTS);
  return warnings;
}

async function stageClassification(staging: Staging, p: SetName, path: string) {
  const { db } = staging;
  const writer = staging.writer();
  const insert = db.prepare(`INSERT INTO ${p}_classification VALUES (?, ?, ?)`);
  const firstLine = db.prepare(`SELECT line FROM ${p}_classification WHERE isoform = ?`).pluck();
  for await (const row of sqantiRows(path, (isoform) => (firstLine.get(isoform) as number | undefined) ?? null))
    writer.run(insert, row.isoform, JSON.stringify(row), row.line);
  writer.commit();
}

async function stageFasta(staging: Staging, p: SetName, path: string) {
  const { db } = staging;
  const writer = staging.writer();
  // A header is told before its sequence is read: its id is claimed then, its sequence set after.
  const claim = db.prepare(`INSERT INTO ${p}_fasta VALUES (?, '', 0, ?) ON CONFLICT DO NOTHING`);
  const firstLine = db.prepare(`SELECT line FROM ${p}_fasta WHERE id = ?`).pluck();
  const set = db.prepare(`UPDATE ${p}_fasta SET sequence = ?, stop = ? WHERE id = ?`);
  const seen = (id: string, line: number) =>
    writer.run(claim, id, line).changes === 0 ? (firstLine.get(id) as number) : null;
  for await (const record of proteinRecords(path, seen))
    writer.run(set, record.sequence, record.stop ? 1 : 0, record.id);
  writer.commit();
}

async function stageGenePred(staging: Staging, p: SetName, path: string) {
  const { db } = staging;
  const writer = staging.writer();
  const insert = db.prepare(`INSERT INTO ${p}_gene_pred VALUES (?, ?, ?)`);
  const firstLine = db.prepare(`SELECT line FROM ${p}_gene_pred WHERE name = ?`).pluck();
  for await (const entry of genePredEntries(path, (name) => (firstLine.get(name) as number | undefined) ?? null))
    writer.run(insert, entry.name, JSON.stringify(entry), entry.line);
  writer.commit();
}

/** Streams a set's files into staging, one after the other (a write transaction is never shared
 * between readers), each checked as a whole once read. */
export async function stageSet(staging: Staging, name: SetName, files: SetFiles): Promise<StagedSet> {
  createTables(staging, name);
  try {
    const warnings = await stageGtf(staging, name, files.gtf);
    if (files.classification) await stageClassification(staging, name, files.classification);
    if (files.fasta) await stageFasta(staging, name, files.fasta);
    if (files.gene_pred) await stageGenePred(staging, name, files.gene_pred);
    return { name, files, warnings };
  } finally {
    if (staging.db.inTransaction) staging.db.exec('ROLLBACK');
  }
}

interface TranscriptRow {
  transcript_id: string;
  gene_id: string;
  gene_name: string | null;
  gene_type: string | null;
  transcript_type: string | null;
  transcript_name: string | null;
  protein_id: string | null;
  hgnc_id: string | null;
  tags: string;
  chromosome: string;
  strand: '+' | '-';
  start: number;
  end: number;
  line: number;
}

function toTranscript(r: TranscriptRow): GtfTranscript {
  return {
    transcriptId: r.transcript_id,
    geneId: r.gene_id,
    geneName: r.gene_name,
    geneType: r.gene_type,
    transcriptType: r.transcript_type,
    transcriptName: r.transcript_name,
    proteinId: r.protein_id,
    hgncId: r.hgnc_id,
    tags: JSON.parse(r.tags) as string[],
    chromosome: r.chromosome,
    strand: r.strand,
    start: r.start,
    end: r.end,
    exonCount: 0,
    length: 0,
    exons: [],
    cdsLength: 0,
    cds: null,
    line: r.line,
  };
}

interface FeatureRow {
  transcript_id: string;
  kind: number;
  start: number;
  end: number;
  phase: number | null;
}

const KIND_OF = Object.fromEntries(Object.entries(FEATURE_KINDS).map(([k, n]) => [n, k])) as Record<
  number,
  FeatureKind
>;

/** Transcripts with their structure (exons 5′ to 3′, CDS), as readGtf gives them, from the features
 * of `rows` (all of their transcripts', in transcript, kind, start and line order). */
function withStructure(path: string, transcripts: TranscriptRow[], rows: FeatureRow[]): GtfTranscript[] {
  const out: GtfTranscript[] = [];
  let k = 0;
  for (const r of transcripts) {
    const t = toTranscript(r);
    let summary: FeatureSummary | null = null;
    for (; k < rows.length && rows[k]!.transcript_id === r.transcript_id; k++) {
      const f = rows[k]!;
      summary ??= emptySummary();
      addFeature(summary, KIND_OF[f.kind]!, f.start, f.end, f.phase);
    }
    if (summary) setStructure(t, summary);
    oneExonIfNone(path, t);
    out.push(t);
  }
  return out;
}

/** What the other files of a set say about a page of its transcripts. */
export interface TranscriptPage {
  transcripts: GtfTranscript[];
  classification: Map<string, SqantiRow>;
  fasta: Map<string, { sequence: string; stop: boolean }>;
  genePred: Map<string, GenePredTranscript>;
}

/** The set's transcripts in transcript id order, a page at a time, with the rows of the other files
 * that name them. */
export function* transcriptPages(staging: Staging, set: StagedSet): Generator<TranscriptPage> {
  const p = set.name;
  const { db } = staging;
  const range = (table: string, key: string, order = key) =>
    db.prepare(`SELECT * FROM ${p}_${table} WHERE ${key} >= @from AND ${key} <= @to ORDER BY ${order}`);
  const features = range('features', 'transcript_id', 'transcript_id, kind, start, line');
  const classification = range('classification', 'isoform');
  const fasta = range('fasta', 'id');
  const genePred = range('gene_pred', 'name');
  for (const page of staging.pages<TranscriptRow>(
    (after) =>
      `SELECT * FROM ${p}_transcripts ${after ? 'WHERE transcript_id > @id' : ''} ORDER BY transcript_id LIMIT @limit`,
    (row) => ({ id: row.transcript_id }),
  )) {
    const bounds = { from: page[0]!.transcript_id, to: page[page.length - 1]!.transcript_id };
    yield {
      transcripts: withStructure(set.files.gtf, page, features.all(bounds) as FeatureRow[]),
      classification: new Map(
        (classification.all(bounds) as { isoform: string; data: string }[]).map((r) => [
          r.isoform,
          JSON.parse(r.data) as SqantiRow,
        ]),
      ),
      fasta: new Map(
        (fasta.all(bounds) as { id: string; sequence: string; stop: number }[]).map((r) => [
          r.id,
          { sequence: r.sequence, stop: r.stop === 1 },
        ]),
      ),
      genePred: new Map(
        (genePred.all(bounds) as { name: string; data: string }[]).map((r) => [
          r.name,
          JSON.parse(r.data) as GenePredTranscript,
        ]),
      ),
    };
  }
}

/** Point lookups into a staged set, for isoforms visited in an order other than transcript id's. */
export function lookups(staging: Staging, set: StagedSet) {
  const p = set.name;
  const { db } = staging;
  const transcript = db.prepare(`SELECT * FROM ${p}_transcripts WHERE transcript_id = ?`);
  const features = db.prepare(
    `SELECT transcript_id, kind, start, end, phase FROM ${p}_features WHERE transcript_id = ? ORDER BY kind, start, line`,
  );
  const classification = db.prepare(`SELECT data FROM ${p}_classification WHERE isoform = ?`).pluck();
  const fasta = db.prepare(`SELECT sequence, stop FROM ${p}_fasta WHERE id = ?`);
  return {
    transcript(id: string): GtfTranscript | null {
      const row = transcript.get(id) as TranscriptRow | undefined;
      return row ? withStructure(set.files.gtf, [row], features.all(id) as FeatureRow[])[0]! : null;
    },
    classification(id: string): SqantiRow {
      return JSON.parse(classification.get(id) as string) as SqantiRow;
    },
    fasta(id: string): { sequence: string; stop: boolean } | null {
      const row = fasta.get(id) as { sequence: string; stop: number } | undefined;
      return row ? { sequence: row.sequence, stop: row.stop === 1 } : null;
    },
  };
}

/** The first row (in file order) of a set's `table` whose `key` is not among `among`'s, with its
 * line: a cross-reference the set does not resolve. */
export function firstUnmatched(
  staging: Staging,
  set: StagedSet,
  table: 'classification' | 'fasta' | 'gene_pred',
  among: { table: 'transcripts' | 'classification'; key: string },
): { id: string; line: number } | null {
  const p = set.name;
  const key = { classification: 'isoform', fasta: 'id', gene_pred: 'name' }[table];
  const row = staging.db
    .prepare(
      `SELECT ${key} AS id, line FROM ${p}_${table} x
       WHERE NOT EXISTS (SELECT 1 FROM ${p}_${among.table} y WHERE y.${among.key} = x.${key})
       ORDER BY line LIMIT 1`,
    )
    .get() as { id: string; line: number } | undefined;
  return row ?? null;
}
