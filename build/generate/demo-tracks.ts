// Generates plausible, clearly-labelled annotation tracks (domains, neoantigens, PTM sites,
// CA-only structures) for the demo release, which has no real inputs for them. Every value is tied
// to the real protein sequence in the release database, and the output is byte-identical for the
// same database and seed: rows come from ORDER BY queries, every random stream is keyed by
// (seed, track, gene or transcript id), rows are sorted explicitly and numbers have fixed decimals.

import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Database } from 'better-sqlite3';
import { Rng } from './random.js';
import { caTrace, fixed, writeCaModelMmcif, type SecondaryStructure } from './mmcif.js';

export interface DemoTracksOptions {
  seed: number;
  /** How many eligible isoforms (30–600 aa) get a generated structure. Default 150. */
  structureSample?: number;
}

export interface DemoTracksResult {
  domains: number;
  neoantigens: number;
  ptm: number;
  structures: number;
  /** Written files, relative to outDir, '/'-separated, sorted. */
  files: string[];
}

export const DOMAINS_COLUMNS = [
  'transcript_id',
  'source',
  'accession',
  'name',
  'start',
  'end',
  'segments',
  'score',
  'score_kind',
  'evalue',
] as const;

/** What a generated domain's score stands for: a Pfam bit score, or a TED confidence (as Merizo's). */
export const scoreKind = (d: { source: 'pfam' | 'ted'; score: string }): string =>
  d.score === '' ? '' : d.source === 'pfam' ? 'bit_score' : 'confidence';
export const NEOANTIGENS_COLUMNS = [
  'transcript_id',
  'peptide',
  'allele',
  'affinity_nm',
  'percentile_rank',
  'start',
] as const;
export const PTM_COLUMNS = ['transcript_id', 'position', 'residue', 'modification', 'source'] as const;
export const STRUCTURES_COLUMNS = ['transcript_id', 'model_file', 'mean_plddt', 'model_source'] as const;

export const PTM_SOURCE = 'isoatlas-demo-generator';
export const STRUCTURE_MODEL_SOURCE = 'isoatlas demo generator (CA-only, generated)';
export const DEFAULT_STRUCTURE_SAMPLE = 150;

// Real Pfam families, with a typical model length (clamped to 25–250) so segment sizes look right.
export const PFAM_FAMILIES: readonly { accession: string; name: string; min: number; max: number }[] = [
  { accession: 'PF00069', name: 'Pkinase', min: 200, max: 250 },
  { accession: 'PF07714', name: 'PK_Tyr_Ser-Thr', min: 200, max: 250 },
  { accession: 'PF00076', name: 'RRM_1', min: 60, max: 72 },
  { accession: 'PF00096', name: 'zf-C2H2', min: 25, max: 28 },
  { accession: 'PF00400', name: 'WD40', min: 30, max: 40 },
  { accession: 'PF00018', name: 'SH3_1', min: 45, max: 50 },
  { accession: 'PF00017', name: 'SH2', min: 75, max: 80 },
  { accession: 'PF00169', name: 'PH', min: 95, max: 110 },
  { accession: 'PF00595', name: 'PDZ', min: 75, max: 85 },
  { accession: 'PF07679', name: 'I-set', min: 85, max: 92 },
  { accession: 'PF00041', name: 'fn3', min: 80, max: 88 },
  { accession: 'PF00046', name: 'Homeodomain', min: 55, max: 57 },
  { accession: 'PF00010', name: 'HLH', min: 45, max: 55 },
  { accession: 'PF00023', name: 'Ank', min: 30, max: 33 },
  { accession: 'PF12796', name: 'Ank_2', min: 85, max: 95 },
  { accession: 'PF00036', name: 'EF-hand_1', min: 27, max: 29 },
  { accession: 'PF00047', name: 'ig', min: 75, max: 90 },
  { accession: 'PF00028', name: 'Cadherin', min: 90, max: 95 },
  { accession: 'PF00001', name: '7tm_1', min: 240, max: 250 },
  { accession: 'PF00004', name: 'AAA', min: 125, max: 135 },
  { accession: 'PF00071', name: 'Ras', min: 155, max: 162 },
  { accession: 'PF00153', name: 'Mito_carr', min: 85, max: 95 },
  { accession: 'PF00089', name: 'Trypsin', min: 215, max: 225 },
  { accession: 'PF00008', name: 'EGF', min: 30, max: 32 },
  { accession: 'PF00084', name: 'Sushi', min: 55, max: 58 },
  { accession: 'PF00651', name: 'BTB', min: 100, max: 110 },
  { accession: 'PF00270', name: 'DEAD', min: 160, max: 170 },
  { accession: 'PF00271', name: 'Helicase_C', min: 105, max: 112 },
  { accession: 'PF00168', name: 'C2', min: 95, max: 105 },
  { accession: 'PF00412', name: 'LIM', min: 55, max: 58 },
  { accession: 'PF00439', name: 'Bromodomain', min: 80, max: 85 },
  { accession: 'PF00856', name: 'SET', min: 110, max: 125 },
  { accession: 'PF01352', name: 'KRAB', min: 38, max: 41 },
  { accession: 'PF00240', name: 'ubiquitin', min: 68, max: 72 },
  { accession: 'PF00628', name: 'PHD', min: 48, max: 52 },
  { accession: 'PF07686', name: 'V-set', min: 105, max: 115 },
];

// CATH superfamily labels as TED reports them.
export const CATH_LABELS: readonly string[] = [
  '3.30.70.330',
  '1.10.510.10',
  '3.30.200.20',
  '2.60.40.10',
  '3.40.50.300',
  '1.25.40.10',
  '2.130.10.10',
  '1.10.238.10',
  '3.30.160.60',
  '2.30.30.40',
  '3.30.505.10',
  '2.30.29.30',
  '2.30.42.10',
  '1.10.10.60',
  '3.80.10.10',
  '1.25.10.10',
  '3.40.50.720',
  '2.40.10.10',
  '1.20.1070.10',
  '3.30.40.10',
];

// Common HLA class I alleles.
export const HLA_ALLELES: readonly string[] = [
  'HLA-A*01:01',
  'HLA-A*02:01',
  'HLA-A*03:01',
  'HLA-A*11:01',
  'HLA-A*24:02',
  'HLA-A*26:01',
  'HLA-B*07:02',
  'HLA-B*08:01',
  'HLA-B*15:01',
  'HLA-B*35:01',
  'HLA-B*40:01',
  'HLA-B*44:02',
  'HLA-C*03:04',
  'HLA-C*04:01',
  'HLA-C*07:01',
  'HLA-C*07:02',
];

const GLYCOSYLATION = 'N-linked (GlcNAc...) asparagine';

// Modification, its residue rule, and how often it is drawn (phosphoserine dominates real data).
const PTM_TYPES: readonly { modification: string; weight: number; sites: (seq: string) => number[] }[] = [
  { modification: 'Phosphoserine', weight: 45, sites: (seq) => residuePositions(seq, 'S') },
  { modification: 'Phosphothreonine', weight: 20, sites: (seq) => residuePositions(seq, 'T') },
  { modification: 'Phosphotyrosine', weight: 8, sites: (seq) => residuePositions(seq, 'Y') },
  { modification: 'N6-acetyllysine', weight: 12, sites: (seq) => residuePositions(seq, 'K') },
  { modification: 'Omega-N-methylarginine', weight: 7, sites: (seq) => residuePositions(seq, 'R') },
  { modification: GLYCOSYLATION, weight: 8, sites: sequonPositions },
];

const PEPTIDE = /^[ACDEFGHIKLMNPQRSTVWY]+$/;

interface Isoform {
  transcriptId: string;
  geneId: string;
  sequence: string;
}

type Segment = [number, number];

interface DomainRow {
  transcriptId: string;
  source: 'pfam' | 'ted';
  accession: string;
  name: string;
  segments: Segment[];
  score: string;
  evalue: string;
}

interface NeoantigenRow {
  transcriptId: string;
  peptide: string;
  allele: string;
  affinity: string;
  rank: string;
  start: number;
}

interface PtmRow {
  transcriptId: string;
  position: number;
  residue: string;
  modification: string;
}

interface StructureRow {
  transcriptId: string;
  modelFile: string;
  meanPlddt: string;
  mmcif: string;
}

export function generateDemoTracks(db: Database, outDir: string, opts: DemoTracksOptions): DemoTracksResult {
  const { seed } = opts;
  const structureSample = opts.structureSample ?? DEFAULT_STRUCTURE_SAMPLE;
  const isoforms = readCodingIsoforms(db);

  const domains = generateDomains(seed, isoforms);
  const neoantigens = isoforms.flatMap((iso) => generateNeoantigens(seed, iso));
  const ptm = isoforms.flatMap((iso) => generatePtm(seed, iso));
  const structures = generateStructures(seed, isoforms, domains, structureSample);

  mkdirSync(outDir, { recursive: true });
  // Stale models from an earlier run (other seed or database) must not survive next to the new TSV.
  rmSync(join(outDir, 'structures'), { recursive: true, force: true });
  mkdirSync(join(outDir, 'structures'), { recursive: true });

  const files: string[] = [];
  const write = (relative: string, text: string): void => {
    writeFileSync(join(outDir, ...relative.split('/')), text);
    files.push(relative);
  };

  write(
    'domains.tsv',
    tsv(
      DOMAINS_COLUMNS,
      domains.map((d) => [
        d.transcriptId,
        d.source,
        d.accession,
        d.name,
        String(d.segments[0]![0]),
        String(d.segments[d.segments.length - 1]![1]),
        d.segments.map(([s, e]) => `${s}-${e}`).join('_'),
        d.score,
        scoreKind(d),
        d.evalue,
      ]),
    ),
  );
  write(
    'neoantigens.tsv',
    tsv(
      NEOANTIGENS_COLUMNS,
      neoantigens.map((n) => [n.transcriptId, n.peptide, n.allele, n.affinity, n.rank, String(n.start)]),
    ),
  );
  write(
    'ptm.tsv',
    tsv(
      PTM_COLUMNS,
      ptm.map((p) => [p.transcriptId, String(p.position), p.residue, p.modification, PTM_SOURCE]),
    ),
  );
  write(
    'structures.tsv',
    tsv(
      STRUCTURES_COLUMNS,
      structures.map((s) => [s.transcriptId, s.modelFile, s.meanPlddt, STRUCTURE_MODEL_SOURCE]),
    ),
  );
  for (const s of structures) write(s.modelFile, s.mmcif);

  return {
    domains: domains.length,
    neoantigens: neoantigens.length,
    ptm: ptm.length,
    structures: structures.length,
    files: [...files].sort(compare),
  };
}

function readCodingIsoforms(db: Database): Isoform[] {
  const rows = db
    .prepare(
      `SELECT transcript_id, gene_id, protein_sequence FROM isoforms
       WHERE coding = 1 AND protein_sequence IS NOT NULL
       ORDER BY transcript_id`,
    )
    .all() as { transcript_id: string; gene_id: string; protein_sequence: string }[];
  return rows
    .map((r) => ({ transcriptId: r.transcript_id, geneId: r.gene_id, sequence: r.protein_sequence.replace(/\*$/, '') }))
    .filter((r) => r.sequence.length > 0)
    .sort((a, b) => compare(a.transcriptId, b.transcriptId));
}

/** Code-unit order: locale-independent, unlike localeCompare. */
function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

// ---------------------------------------------------------------------------------------------
// Domains: drawn once per gene on its longest protein, then copied to each sibling isoform whose
// protein still contains the exact domain sequence, so isoforms that lose the region lose the domain.

function generateDomains(seed: number, isoforms: readonly Isoform[]): DomainRow[] {
  const byGene = new Map<string, Isoform[]>();
  for (const iso of isoforms) {
    const list = byGene.get(iso.geneId);
    if (list) list.push(iso);
    else byGene.set(iso.geneId, [iso]);
  }
  const rows: DomainRow[] = [];
  for (const geneId of [...byGene.keys()].sort(compare)) {
    const members = byGene.get(geneId)!;
    const source = longestProtein(members);
    const rng = Rng.for(seed, 'domains', geneId);
    const pfam = drawPfam(rng, source);
    const drawn = [...pfam, ...drawTed(rng, source, pfam)];
    for (const domain of drawn) {
      const [start, end] = [domain.segments[0]![0], domain.segments[domain.segments.length - 1]![1]];
      const region = source.sequence.slice(start - 1, end);
      for (const iso of members) {
        const index = iso === source ? start - 1 : iso.sequence.indexOf(region);
        if (index < 0) continue;
        const shift = index + 1 - start;
        rows.push({
          ...domain,
          transcriptId: iso.transcriptId,
          segments: domain.segments.map(([s, e]) => [s + shift, e + shift]),
        });
      }
    }
  }
  rows.sort(
    (a, b) =>
      compare(a.transcriptId, b.transcriptId) ||
      a.segments[0]![0] - b.segments[0]![0] ||
      compare(a.source, b.source) ||
      a.segments[a.segments.length - 1]![1] - b.segments[b.segments.length - 1]![1] ||
      compare(a.accession, b.accession),
  );
  // TED ids are per chain: number each isoform's TED domains in sequence order.
  let current = '';
  let counter = 0;
  for (const row of rows) {
    if (row.transcriptId !== current) [current, counter] = [row.transcriptId, 0];
    if (row.source === 'ted') row.accession = `${row.transcriptId}_TED${String(++counter).padStart(2, '0')}`;
  }
  return rows;
}

/** Longest protein; ties go to the smallest transcript id (members are sorted). */
export function longestProtein<T extends { sequence: string }>(members: readonly T[]): T {
  let best = members[0]!;
  for (const m of members) if (m.sequence.length > best.sequence.length) best = m;
  return best;
}

function drawPfam(rng: Rng, source: Isoform): DomainRow[] {
  const length = source.sequence.length;
  const count = rng.weighted([20, 30, 25, 15, 10]);
  const occupied: Segment[] = [];
  const rows: DomainRow[] = [];
  for (let k = 0; k < count; k++) {
    const families = PFAM_FAMILIES.filter((f) => f.min <= length);
    if (families.length === 0) break;
    const family = rng.pick(families);
    const segment = placeSegment(rng, length, family.min, Math.min(family.max, length), occupied);
    if (!segment) continue;
    occupied.push(segment);
    const bits = rng.float(20, 300);
    // Stronger hits get smaller E-values: 1e-5 at 20 bits down to 1e-40 at 300 bits, with jitter.
    const exponent = Math.min(40, Math.max(5, 5 + ((bits - 20) / 280) * 35 + rng.normal() * 0.7));
    rows.push({
      transcriptId: source.transcriptId,
      source: 'pfam',
      accession: family.accession,
      name: family.name,
      segments: [segment],
      score: fixed(bits, 1),
      evalue: (10 ** -exponent).toExponential(1),
    });
  }
  return rows;
}

function drawTed(rng: Rng, source: Isoform, pfam: readonly DomainRow[]): DomainRow[] {
  const length = source.sequence.length;
  if (length < 40) return [];
  const count = rng.int(1, 3);
  const occupied: Segment[] = [];
  const rows: DomainRow[] = [];
  const anchors = pfam.map((d) => d.segments[0]!).filter(([s, e]) => e - s + 1 >= 40);
  for (let k = 0; k < count; k++) {
    const anchor = anchors[k];
    const segments =
      (anchor && rng.chance(0.75) ? anchoredTed(rng, length, anchor, occupied) : null) ??
      randomTed(rng, length, occupied);
    if (!segments) continue;
    occupied.push([segments[0]![0], segments[segments.length - 1]![1]]);
    rows.push({
      transcriptId: source.transcriptId,
      source: 'ted',
      accession: '', // numbered per isoform once all rows are known
      name: rng.pick(CATH_LABELS),
      segments,
      score: rng.chance(0.2) ? '' : fixed(rng.float(0.5, 1.0), 2),
      evalue: '',
    });
  }
  return rows;
}

/** Structural domains mostly coincide with a Pfam family, give or take a few flanking residues. */
function anchoredTed(rng: Rng, length: number, anchor: Segment, occupied: readonly Segment[]): Segment[] | null {
  const start = Math.max(1, anchor[0] - rng.int(0, 12));
  const end = Math.min(length, anchor[1] + rng.int(0, 12));
  return occupied.every(([s, e]) => end < s || start > e) ? [[start, end]] : null;
}

function randomTed(rng: Rng, length: number, occupied: readonly Segment[]): Segment[] | null {
  if (length >= 120 && rng.chance(0.25)) {
    // Discontinuous: two segments around an inserted stretch that belongs to another domain or a loop.
    const [first, gap, second] = [rng.int(30, 100), rng.int(15, 80), rng.int(30, 100)];
    const span = placeSegment(rng, length, first + gap + second, first + gap + second, occupied);
    if (span)
      return [
        [span[0], span[0] + first - 1],
        [span[1] - second + 1, span[1]],
      ];
  }
  const span = placeSegment(rng, length, 40, Math.min(250, length), occupied);
  return span ? [span] : null;
}

/** A 1-based inclusive segment of minLen..maxLen residues that overlaps none of `occupied`, or null
 * after `attempts` random tries. Each generator keeps its own count: it decides how many draws the
 * seeded stream spends here, so changing it would change every generated release. */
export function placeSegment(
  rng: Rng,
  length: number,
  minLen: number,
  maxLen: number,
  occupied: readonly Segment[],
  attempts = 25,
): Segment | null {
  if (minLen > length) return null;
  for (let attempt = 0; attempt < attempts; attempt++) {
    const len = rng.int(minLen, Math.min(maxLen, length));
    const start = rng.int(1, length - len + 1);
    const end = start + len - 1;
    if (occupied.every(([s, e]) => end < s || start > e)) return [start, end];
  }
  return null;
}

// ---------------------------------------------------------------------------------------------
// Neoantigens: real 8–11-mers of the protein with a log-uniform affinity and a correlated rank.

function generateNeoantigens(seed: number, iso: Isoform): NeoantigenRow[] {
  const rng = Rng.for(seed, 'neoantigens', iso.transcriptId);
  const length = iso.sequence.length;
  const count = rng.int(0, Math.min(70, Math.floor(length / 8)));
  const seen = new Set<string>();
  const rows: NeoantigenRow[] = [];
  for (let k = 0; k < count; k++) {
    const len = rng.int(8, 11);
    if (len > length) continue;
    const start = rng.int(1, length - len + 1);
    const peptide = iso.sequence.slice(start - 1, start - 1 + len);
    const allele = rng.pick(HLA_ALLELES);
    const u = rng.next();
    const v = Math.min(1, Math.max(0, u + rng.normal() * 0.08));
    if (!PEPTIDE.test(peptide)) continue;
    const key = `${start}\t${peptide}\t${allele}`;
    if (seen.has(key)) continue;
    seen.add(key);
    rows.push({
      transcriptId: iso.transcriptId,
      peptide,
      allele,
      affinity: fixed(5 * 1000 ** u, 2), // log-uniform 5–5000 nM
      rank: fixed(Math.min(20, Math.max(0.01, 0.01 * 2000 ** v)), 2), // 0.01–20, tracks affinity
      start,
    });
  }
  return rows.sort((a, b) => a.start - b.start || a.peptide.length - b.peptide.length || compare(a.allele, b.allele));
}

// ---------------------------------------------------------------------------------------------
// PTM sites: only on residues that can carry the modification.

function residuePositions(seq: string, residue: string): number[] {
  const positions: number[] = [];
  for (let i = 0; i < seq.length; i++) if (seq[i] === residue) positions.push(i + 1);
  return positions;
}

/** 1-based positions of N in an N-X-[ST] sequon with X ≠ P. */
export function sequonPositions(seq: string): number[] {
  const positions: number[] = [];
  for (let i = 0; i + 2 < seq.length; i++) {
    if (seq[i] === 'N' && seq[i + 1] !== 'P' && (seq[i + 2] === 'S' || seq[i + 2] === 'T')) positions.push(i + 1);
  }
  return positions;
}

function generatePtm(seed: number, iso: Isoform): PtmRow[] {
  const rng = Rng.for(seed, 'ptm', iso.transcriptId);
  const types = PTM_TYPES.map((t) => ({ ...t, positions: t.sites(iso.sequence) })).filter(
    (t) => t.positions.length > 0,
  );
  if (types.length === 0) return [];
  const count = rng.int(0, 15);
  const seen = new Set<string>();
  const rows: PtmRow[] = [];
  for (let attempt = 0; rows.length < count && attempt < count * 3; attempt++) {
    const type = types[rng.weighted(types.map((t) => t.weight))]!;
    const position = rng.pick(type.positions);
    const key = `${position}\t${type.modification}`;
    if (seen.has(key)) continue;
    seen.add(key);
    rows.push({
      transcriptId: iso.transcriptId,
      position,
      residue: iso.sequence[position - 1]!,
      modification: type.modification,
    });
  }
  return rows.sort((a, b) => a.position - b.position || compare(a.modification, b.modification));
}

// ---------------------------------------------------------------------------------------------
// Structures: a seeded sample of 30–600 aa isoforms, pLDDT high over domains and low at termini.

function generateStructures(
  seed: number,
  isoforms: readonly Isoform[],
  domains: readonly DomainRow[],
  sample: number,
): StructureRow[] {
  const eligible = isoforms.filter((iso) => iso.sequence.length >= 30 && iso.sequence.length <= 600);
  // A per-transcript sort key rather than a shuffle: the sample is stable when other isoforms come and go.
  const keyed = eligible.map((iso) => ({ iso, key: Rng.for(seed, 'structure-sample', iso.transcriptId).next() }));
  keyed.sort((a, b) => a.key - b.key || compare(a.iso.transcriptId, b.iso.transcriptId));
  const chosen = keyed
    .slice(0, Math.max(0, sample))
    .map((k) => k.iso)
    .sort((a, b) => compare(a.transcriptId, b.transcriptId));

  const regionsByTranscript = new Map<string, Segment[]>();
  for (const d of domains) {
    const list = regionsByTranscript.get(d.transcriptId) ?? [];
    list.push(...d.segments);
    regionsByTranscript.set(d.transcriptId, list);
  }

  return chosen.map((iso) => {
    if (!/^[A-Za-z0-9._-]+$/.test(iso.transcriptId))
      throw new Error(`transcript id unsafe as a file name: ${iso.transcriptId}`);
    const rng = Rng.for(seed, 'structure', iso.transcriptId);
    const hundredths = plddtProfile(rng, iso.sequence.length, regionsByTranscript.get(iso.transcriptId) ?? []);
    const plddt = hundredths.map((h) => h / 100);
    const coords = caTrace(secondaryStructure(rng, plddt), rng);
    const mmcif = writeCaModelMmcif({
      dataBlock: iso.transcriptId,
      sequence: iso.sequence,
      plddt,
      coords,
      title: `GENERATED by isoatlas demo generator: CA-only model of ${iso.transcriptId} (not a real prediction)`,
    });
    // The mean of exactly the rounded values written to B_iso_or_equiv, summed as integers.
    const mean = hundredths.reduce((a, b) => a + b, 0) / hundredths.length / 100;
    return {
      transcriptId: iso.transcriptId,
      modelFile: `structures/${iso.transcriptId}.cif`,
      meanPlddt: fixed(mean, 2),
      mmcif,
    };
  });
}

/** Per-residue pLDDT in hundredths (integers), within 20.00–98.00. */
function plddtProfile(rng: Rng, length: number, regions: readonly Segment[]): number[] {
  const cores: Segment[] = regions.length > 0 ? [...regions] : [coreRegion(rng, length)];
  const target = new Array<number>(length).fill(rng.float(52, 64));
  for (const [s, e] of cores) {
    const level = rng.float(80, 93);
    for (let i = Math.max(1, s); i <= Math.min(length, e); i++) target[i - 1] = Math.max(target[i - 1]!, level);
  }
  // A disordered loop or two outside the cores.
  for (let k = rng.int(0, 2); k > 0; k--) {
    const len = rng.int(8, 25);
    if (len >= length) break;
    const start = rng.int(1, length - len + 1);
    if (cores.some(([s, e]) => start + len - 1 >= s && start <= e)) continue;
    for (let i = start; i < start + len; i++) target[i - 1] = rng.float(32, 45);
  }
  const smooth = movingAverage(target, 4);
  let noise = 0;
  return smooth.map((value, i) => {
    noise = 0.8 * noise + rng.normal() * 1.5; // AR(1): smooth wiggle, not white noise
    const fromEnd = Math.min(i, length - 1 - i);
    const terminal = fromEnd < 15 ? 30 * (1 - fromEnd / 15) ** 1.5 : 0;
    const v = Math.min(98, Math.max(20, value + noise - terminal));
    return Math.round(v * 100);
  });
}

function coreRegion(rng: Rng, length: number): Segment {
  const len = Math.max(1, Math.round(length * rng.float(0.4, 0.7)));
  const start = rng.int(1, length - len + 1);
  return [start, start + len - 1];
}

function movingAverage(values: readonly number[], radius: number): number[] {
  return values.map((_, i) => {
    let sum = 0;
    let n = 0;
    for (let j = Math.max(0, i - radius); j <= Math.min(values.length - 1, i + radius); j++) {
      sum += values[j]!;
      n++;
    }
    return sum / n;
  });
}

/** Helices and strands where the model is confident, coil elsewhere. */
function secondaryStructure(rng: Rng, plddt: readonly number[]): SecondaryStructure[] {
  const ss: SecondaryStructure[] = new Array<SecondaryStructure>(plddt.length).fill('C');
  let i = 0;
  while (i < plddt.length) {
    if (plddt[i]! < 70) {
      i++;
      continue;
    }
    const helix = rng.chance(0.6);
    const len = helix ? rng.int(6, 16) : rng.int(4, 8);
    for (let k = 0; k < len && i < plddt.length && plddt[i]! >= 65; k++, i++) ss[i] = helix ? 'H' : 'E';
    i += rng.int(2, 4); // loop
  }
  return ss;
}

function tsv(columns: readonly string[], rows: readonly string[][]): string {
  const lines = [columns.join('\t')];
  for (const row of rows) {
    for (const value of row) {
      if (/[\t\r\n]/.test(value)) throw new Error(`TSV value contains a tab or newline: ${JSON.stringify(value)}`);
    }
    lines.push(row.join('\t'));
  }
  return lines.join('\n') + '\n';
}
