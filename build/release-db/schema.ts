// The release database: the one place where curated inputs meet. Importers write it, the renderer
// reads it. Documented column by column in data/README.md.

export const SCHEMA_VERSION = 5;

export const DDL = `
PRAGMA foreign_keys = ON;

CREATE TABLE release_meta (
  key   TEXT PRIMARY KEY,
  value TEXT NOT NULL
);

-- One row per imported track (core inputs included), with where it came from.
CREATE TABLE track_sources (
  track       TEXT NOT NULL,
  source      TEXT NOT NULL,
  version     TEXT,
  generated   INTEGER NOT NULL CHECK (generated IN (0, 1)),
  description TEXT,
  input_file  TEXT NOT NULL,
  input_sha256 TEXT NOT NULL,
  records     INTEGER NOT NULL,                  -- rows this input contributed (isoforms for core inputs)
  PRIMARY KEY (track, input_file)
);

CREATE TABLE genes (
  gene_id           TEXT PRIMARY KEY,              -- unversioned ENSG…, or a SQANTI3 novelGene_… label
  gene_id_versioned TEXT UNIQUE,
  symbol            TEXT NOT NULL,
  biotype           TEXT,
  source            TEXT NOT NULL CHECK (source IN ('reference', 'long_read')),
  chromosome        TEXT NOT NULL,
  strand            TEXT NOT NULL CHECK (strand IN ('+', '-')),
  start             INTEGER NOT NULL CHECK (start >= 1),
  end               INTEGER NOT NULL CHECK (end >= start),
  canonical_transcript_id TEXT REFERENCES isoforms (transcript_id) DEFERRABLE INITIALLY DEFERRED,
  canonical_rule    TEXT CHECK (canonical_rule IN ('MANE_Select', 'Ensembl_canonical', 'longest_annotated_cds', 'longest_coding', 'longest_transcript')),
  hgnc_id           TEXT CHECK (hgnc_id GLOB 'HGNC:[0-9]*')  -- the annotation's own (GENCODE GTF hgnc_id)
);
CREATE INDEX genes_symbol ON genes (symbol COLLATE NOCASE);

-- Names and cross-references of reference genes (import gene-info: org.Hs.eg.db extract or HGNC).
CREATE TABLE gene_info (
  gene_id      TEXT PRIMARY KEY REFERENCES genes (gene_id),
  name         TEXT,                             -- full name
  synonyms     TEXT NOT NULL DEFAULT '[]',       -- JSON array: aliases and previous symbols
  gene_type    TEXT,                             -- the source's type (NCBI gene_type, HGNC locus_group)
  ncbi_gene_id TEXT,
  hgnc_id      TEXT,
  uniprot_ids  TEXT NOT NULL DEFAULT '[]'        -- JSON array of UniProt accessions
);

CREATE TABLE isoforms (
  transcript_id             TEXT PRIMARY KEY,      -- ENST….N or PB.x.y
  transcript_id_unversioned TEXT,                  -- ENST… without version; NULL for PB ids
  transcript_name           TEXT NOT NULL UNIQUE COLLATE NOCASE,
  transcript_name_source    TEXT NOT NULL CHECK (transcript_name_source IN ('gtf', 'generated')),
  gene_id                   TEXT NOT NULL REFERENCES genes (gene_id) DEFERRABLE INITIALLY DEFERRED,
  source                    TEXT NOT NULL CHECK (source IN ('reference', 'long_read')),
  transcript_type           TEXT,
  structural_category       TEXT,
  associated_transcript     TEXT,
  associated_genes          TEXT NOT NULL DEFAULT '[]',  -- JSON array of unversioned gene ids / labels
  chromosome                TEXT NOT NULL,
  strand                    TEXT NOT NULL CHECK (strand IN ('+', '-')),
  start                     INTEGER NOT NULL,
  end                       INTEGER NOT NULL,
  length                    INTEGER NOT NULL CHECK (length > 0),
  exon_count                INTEGER NOT NULL CHECK (exon_count > 0),
  coding                    INTEGER CHECK (coding IN (0, 1)),
  protein_length            INTEGER CHECK (protein_length >= 0),
  protein_sequence          TEXT,                  -- without the terminal stop '*'
  nmd                       INTEGER CHECK (nmd IN (0, 1)),
  nmd_source                TEXT,
  expression_tpm            REAL,
  expression_source         TEXT,                  -- the quantification behind expression_tpm
  tags                      TEXT NOT NULL DEFAULT '[]',  -- JSON array of GTF tag values
  exons                     TEXT NOT NULL DEFAULT '[]',  -- JSON [[start, end], …], genomic, 5′ to 3′
  orf_start                 INTEGER,               -- genomic, start <= end, stop codon included when there is one
  orf_end                   INTEGER,
  orf_transcript_start      INTEGER,               -- the same bounds, 1-based from the transcript's 5′ end
  orf_transcript_end        INTEGER,
  orf_completeness          TEXT CHECK (orf_completeness IN ('complete', '5prime_partial', '3prime_partial', 'internal')),
  orf_source                TEXT CHECK (orf_source IN ('sqanti3', 'gtf')),
  reference_cds             TEXT,                  -- JSON of the annotation's own CDS (records.ts ReferenceCds); reference isoforms
  qc                        TEXT,                  -- JSON of SQANTI3 quality attributes (long-read isoforms)
  CHECK ((orf_start IS NULL) = (orf_completeness IS NULL)),
  CHECK (orf_end >= orf_start AND orf_transcript_end >= orf_transcript_start),
  UNIQUE (transcript_id_unversioned)
);
CREATE INDEX isoforms_gene ON isoforms (gene_id);

CREATE TABLE domains (
  id            INTEGER PRIMARY KEY,
  transcript_id TEXT NOT NULL REFERENCES isoforms (transcript_id),
  source        TEXT NOT NULL CHECK (source IN ('pfam', 'ted')),
  accession     TEXT NOT NULL,
  name          TEXT,
  start         INTEGER NOT NULL CHECK (start >= 1),
  end           INTEGER NOT NULL CHECK (end >= start),
  segments      TEXT NOT NULL,                     -- JSON [[start, end], …]
  score         REAL,
  score_kind    TEXT CHECK (score_kind IN ('bit_score', 'uncertainty', 'confidence')),  -- what score measures
  evalue        REAL,
  provenance    TEXT NOT NULL CHECK (provenance IN ('real', 'generated')),
  input_file    TEXT NOT NULL,                     -- the track_sources input it came from
  CHECK ((score IS NULL) = (score_kind IS NULL))
);
CREATE INDEX domains_transcript ON domains (transcript_id);

CREATE TABLE neoantigens (
  id              INTEGER PRIMARY KEY,
  transcript_id   TEXT NOT NULL REFERENCES isoforms (transcript_id),
  peptide         TEXT NOT NULL,
  allele          TEXT NOT NULL,
  affinity_nm     REAL,
  percentile_rank REAL,
  start           INTEGER NOT NULL CHECK (start >= 1),
  provenance      TEXT NOT NULL CHECK (provenance IN ('real', 'generated')),
  input_file      TEXT NOT NULL,
  CHECK (affinity_nm IS NOT NULL OR percentile_rank IS NOT NULL)
);
CREATE INDEX neoantigens_transcript ON neoantigens (transcript_id);

CREATE TABLE ptm_sites (
  id            INTEGER PRIMARY KEY,
  transcript_id TEXT NOT NULL REFERENCES isoforms (transcript_id),
  position      INTEGER NOT NULL CHECK (position >= 1),
  residue       TEXT NOT NULL,
  modification  TEXT NOT NULL,
  source        TEXT NOT NULL,
  provenance    TEXT NOT NULL CHECK (provenance IN ('real', 'generated')),
  input_file    TEXT NOT NULL
);
CREATE INDEX ptm_sites_transcript ON ptm_sites (transcript_id);

CREATE TABLE structures (
  transcript_id TEXT PRIMARY KEY REFERENCES isoforms (transcript_id),
  model_source  TEXT NOT NULL,
  mean_plddt    REAL NOT NULL CHECK (mean_plddt BETWEEN 0 AND 100),
  mmcif         BLOB,                              -- the model file; NULL when only a path is known
  mmcif_sha256  TEXT,
  plddt_residues TEXT,                             -- JSON {"start": s, "values": [...]}: pLDDT of residues s, s+1, … of the protein
  provenance    TEXT NOT NULL CHECK (provenance IN ('real', 'generated')),
  input_file    TEXT NOT NULL
);

-- The six summary metrics. A count is NULL (not 0) when it does not apply (non-coding isoform) or
-- when the release has no such track at all: unknown is not zero.
CREATE VIEW isoform_metrics AS
SELECT
  i.transcript_id,
  CASE WHEN i.coding = 1 AND c.coding = 1 THEN i.protein_length - c.protein_length END AS delta_length,
  i.nmd AS nmd,
  CASE WHEN i.coding = 1 AND EXISTS (SELECT 1 FROM track_sources WHERE track = 'domains')
       THEN (SELECT count(*) FROM domains d WHERE d.transcript_id = i.transcript_id) END AS domains,
  CASE WHEN i.coding = 1 AND EXISTS (SELECT 1 FROM track_sources WHERE track = 'neoantigens')
       THEN (SELECT count(*) FROM neoantigens n WHERE n.transcript_id = i.transcript_id) END AS neoantigens,
  CASE WHEN i.coding = 1 AND EXISTS (SELECT 1 FROM track_sources WHERE track = 'ptm')
       THEN (SELECT count(*) FROM ptm_sites p WHERE p.transcript_id = i.transcript_id) END AS ptm,
  (SELECT s.mean_plddt FROM structures s WHERE s.transcript_id = i.transcript_id) AS plddt
FROM isoforms i
JOIN genes g ON g.gene_id = i.gene_id
LEFT JOIN isoforms c ON c.transcript_id = g.canonical_transcript_id;
`;

/** Tracks an annotation importer can add to a release. */
export const TRACKS = ['domains', 'neoantigens', 'ptm', 'structures'] as const;
export type Track = (typeof TRACKS)[number];
/** The table of each track's records. */
export const TRACK_TABLES: Record<Track, string> = {
  domains: 'domains',
  neoantigens: 'neoantigens',
  ptm: 'ptm_sites',
  structures: 'structures',
};
