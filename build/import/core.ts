// `isoatlas import core`: reference and long-read inputs → genes and isoforms of a new release
// database, one transaction per track. Inputs are named by a release config file (JSON), so a
// release is reproducible from what is written down.
import { basename, dirname, resolve } from 'node:path';
import { Type, type Static } from '@sinclair/typebox';
import { readGtf, type Gtf } from './gtf.js';
import { readSqantiClassification } from './sqanti.js';
import { readProteinFasta } from './fasta.js';
import { readGenePred } from './gene-pred.js';
import { sha256File } from './input.js';
import { readJsonConfig } from '../common/json-config.js';
import { assembleReference } from './reference.js';
import { assembleLongRead } from './long-read.js';
import { assignTranscriptNames } from './naming.js';
import { chooseCanonical } from './canonical.js';
import { unversioned, type GeneRecord, type IsoformRecord } from '../release-db/records.js';
import { checkNewDbPath, createReleaseDb, type Db } from '../release-db/database.js';

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

async function readSet(set: CoreConfig['reference']) {
  const [gtf, classification, fasta, genePred] = await Promise.all([
    readGtf(set.gtf),
    set.classification ? readSqantiClassification(set.classification) : null,
    set.fasta ? readProteinFasta(set.fasta) : null,
    set.gene_pred ? readGenePred(set.gene_pred) : null,
  ]);
  return {
    gtf,
    classification: classification && set.classification ? { file: set.classification, rows: classification } : null,
    fasta: fasta && set.fasta ? { file: set.fasta, sequences: fasta.sequences, stops: fasta.stops } : null,
    genePred: genePred && set.gene_pred ? { file: set.gene_pred, transcripts: genePred } : null,
    expressionSource: set.classification ? (set.expression ?? `${set.source}: SQANTI3 iso_exp`) : null,
  };
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

/** The HGNC id GENCODE gives each gene (on its gene line, else on its transcripts' lines), by
 * unversioned gene id. */
function annotatedHgncIds(gtf: Gtf): Map<string, string> {
  const out = new Map<string, string>();
  for (const t of gtf.transcripts.values()) if (t.hgncId) out.set(unversioned(t.geneId), t.hgncId);
  for (const g of gtf.genes.values()) if (g.hgncId) out.set(unversioned(g.geneId), g.hgncId);
  return out;
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

export async function importCore(config: CoreConfig, outPath: string): Promise<CoreSummary> {
  checkNewDbPath(outPath);
  const [reference, longRead] = await Promise.all([
    readSet(config.reference),
    config.long_read ? readSet(config.long_read) : null,
  ]);

  const genes = new Map<string, GeneRecord>();
  const referenceIsoforms = assembleReference(reference, genes);
  const lr = longRead
    ? assembleLongRead({ ...longRead, classification: longRead.classification! }, genes)
    : { isoforms: [], gtfOnly: 0 };
  const all = [...referenceIsoforms, ...lr.isoforms];
  assignTranscriptNames(all, genes);

  const byGene = new Map<string, IsoformRecord[]>();
  for (const iso of all) {
    const list = byGene.get(iso.gene_id);
    if (list) list.push(iso);
    else byGene.set(iso.gene_id, [iso]);
  }
  for (const [geneId, hgnc] of annotatedHgncIds(reference.gtf)) {
    const gene = genes.get(geneId);
    if (gene) gene.hgnc_id = hgnc;
  }
  for (const gene of genes.values()) {
    const choice = chooseCanonical(byGene.get(gene.gene_id) ?? []);
    gene.canonical_transcript_id = choice?.transcriptId ?? null;
    gene.canonical_rule = choice?.rule ?? null;
  }

  await createReleaseDb(outPath, async (db) => {
    const meta = db.prepare('INSERT INTO release_meta (key, value) VALUES (?, ?)');
    for (const key of ['release', 'date', 'title', 'assembly'] as const) meta.run(key, config[key]);
    if (config.coverage) meta.run('coverage', config.coverage);

    const insertGene = insertStatement(db, 'genes', GENE_COLUMNS);
    const insertIsoform = insertStatement(db, 'isoforms', ISOFORM_COLUMNS);
    const sortedGenes = [...genes.values()].sort((a, b) => (a.gene_id < b.gene_id ? -1 : 1));
    // Reference isoforms before their genes: while a deferred foreign key is pending, every new
    // parent row makes SQLite search its child table, and genes.canonical_transcript_id has no index
    // (a scan of all genes per isoform: hours at 250,000 isoforms), while isoforms.gene_id has one.
    db.transaction(() => {
      for (const iso of referenceIsoforms) insertIsoform.run(toRow(iso));
      for (const gene of sortedGenes)
        if (gene.source === 'reference') insertGene.run({ ...gene, hgnc_id: gene.hgnc_id ?? null });
    })();
    await recordSources(db, 'reference', config.reference, referenceIsoforms.length);
    if (config.long_read) {
      db.transaction(() => {
        // Novel loci have no canonical isoform, so here genes go first and nothing is left pending.
        for (const gene of sortedGenes)
          if (gene.source === 'long_read') insertGene.run({ ...gene, hgnc_id: gene.hgnc_id ?? null });
        for (const iso of lr.isoforms) insertIsoform.run(toRow(iso));
      })();
      await recordSources(db, 'long_read', config.long_read, lr.isoforms.length);
    }
  });

  return {
    genes: genes.size,
    referenceIsoforms: referenceIsoforms.length,
    longReadIsoforms: lr.isoforms.length,
    novelGenes: [...genes.values()].filter((g) => g.source === 'long_read').length,
    longReadGtfOnly: lr.gtfOnly,
    warnings: [
      ...reference.gtf.warnings,
      ...(longRead?.gtf.warnings ?? []),
      ...(lr.gtfOnly
        ? [`${config.long_read!.gtf}: ${lr.gtfOnly} transcripts have no classification row and were skipped`]
        : []),
    ],
  };
}
