// Native neoantigen predictor outputs → NeoantigenRecord. Each reader keeps the transcript id the file
// gives (`transcript`); rankAndMap() later maps it onto the release's transcript ids.
//
// Where a peptide starts on the protein (`start`, 1-based):
// - pVACseq all_epitopes.tsv: `Protein Position` is the (first) mutated residue on the protein and
//   `Mutation Position` the (first) mutated residue within the epitope, 1-based. So
//     start = Protein Position − Mutation Position + 1.
//   Both may be ranges (`287-288`, `4-5`) or lists (`1, 2`): the first number is used. Frameshifts give
//   `Mutation Position` = `NA`: the start cannot be computed, the row is skipped and counted.
// - pVACsplice all_epitopes.tsv: there is no in-epitope offset (the epitope lies on the altered junction
//   protein), so `start` is the `Protein Position` anchor of the alteration on the reference protein,
//   not the epitope's first residue; the reader says so in a warning.
// - pVACseq aggregated.tsv: `Pos` is the mutation's position within `Best Peptide` (1-based, `NA` for
//   frameshifts), not on the protein; the protein position is the first number of `AA Change`
//   (`E510Q` → 510, `AAAAAAAA495-502A` → 495). start = that − Pos + 1; rows without Pos are skipped.
// - MHCflurry (pVACtools wrapper TSV) and NetMHCpan in IEDB layout: `start` is the peptide's 1-based
//   offset in the input sequence `seq_num` (both files' smallest start is 1 and consecutive peptides of
//   one seq_num step by 1). These files have no transcript: the caller's transcriptFor(seq_num) gives it.
// Missing values (`NA`, `None`, empty) become null; a row whose start is < 1 or not computable is skipped.
//
// pVACseq rows come from the transcript version the variant caller used, which need not be the
// release's (the ids are matched unversioned): placeByWildType() keeps a row only where its wild-type
// epitope (`WT Epitope Seq`; for aggregated missense rows, the best peptide with the `AA Change`
// reference residue put back) sits at the computed start on the release protein, or occurs exactly
// once in it (the row is moved there). A row whose mutant epitope already is the release protein's
// sequence is no neoantigen of that isoform. Skips are counted by reason.
import { cellParsers, readTsv } from '../input.js';
import type { Located, NeoantigenRecord } from '../tracks.js';
import type { Db } from '../../release-db/database.js';
import { releaseProteins } from './domains.js';

export type NativeNeoantigen = NeoantigenRecord & {
  transcript: string;
  /** The wild-type epitope, where the format gives or implies it. */
  wt_peptide: string | null;
};

export interface NativeNeoantigenRead {
  rows: Located<NativeNeoantigen>[];
  /** Rows whose protein start could not be computed (or had no transcript). */
  skipped: number;
  warnings: string[];
}

type Row = Record<string, string>;
type Cells = ReturnType<typeof cellParsers>;

interface Format {
  name: string;
  required: string[];
  /** Columns the format documents but this reader does not use (not warned about). */
  known: string[];
  /** Per-predictor / per-allele columns whose names depend on the run. */
  knownPattern?: RegExp;
  /** Row → record, or null to skip the row (counted). */
  parse(row: Row, p: Cells): NativeNeoantigen | null;
}

const firstInt = (text: string): number | null => {
  const m = /\d+/.exec(text);
  return m ? Number(m[0]) : null;
};

const PVAC_COMMON = [
  'Chromosome',
  'Start',
  'Stop',
  'Reference',
  'Variant',
  'Transcript',
  'Transcript Support Level',
  'Transcript Length',
  'Canonical',
  'MANE Select',
  'Biotype',
  'Transcript CDS Flags',
  'Ensembl Gene ID',
  'Variant Type',
  'Protein Position',
  'Gene Name',
  'HGVSc',
  'HGVSp',
  'HLA Allele',
  'Peptide Length',
  'Tumor DNA Depth',
  'Tumor DNA VAF',
  'Tumor RNA Depth',
  'Tumor RNA VAF',
  'Normal Depth',
  'Normal VAF',
  'Gene Expression',
  'Transcript Expression',
  'Index',
  'Gene of Interest',
  'cterm_7mer_gravy_score',
  'max_7mer_gravy_score',
  'difficult_n_terminal_residue',
  'c_terminal_cysteine',
  'c_terminal_proline',
  'cysteine_count',
  'n_terminal_asparagine',
  'asparagine_proline_bond_count',
  'Problematic Positions',
];

const affinity = (p: Cells, column: string, row: Row) => p.num(column, row[column]!, { min: 0, nullable: true });
const percentile = (p: Cells, column: string, row: Row) =>
  p.num(column, row[column]!, { min: 0, max: 100, nullable: true });
const peptide = (p: Cells, column: string, row: Row) => p.text(column, row[column]!)!.toUpperCase();

const PVACSEQ: Format = {
  name: 'pVACseq all_epitopes',
  required: [
    'Transcript',
    'HLA Allele',
    'MT Epitope Seq',
    'Best MT IC50 Score',
    'Best MT Percentile',
    'Protein Position',
    'Mutation Position',
  ],
  known: [
    ...PVAC_COMMON,
    'Mutation',
    'Sub-peptide Position',
    'WT Epitope Seq',
    'Best MT IC50 Score Method',
    'Corresponding WT IC50 Score',
    'Corresponding Fold Change',
    'Best MT Percentile Method',
    'Corresponding WT Percentile',
    'Median MT IC50 Score',
    'Median WT IC50 Score',
    'Median Fold Change',
    'Median MT Percentile',
    'Median WT Percentile',
  ],
  knownPattern: /^.+ (WT|MT) (IC50 Score|Percentile)$/,
  parse(row, p) {
    const protein = p.isNull(row['Protein Position']!) ? null : firstInt(row['Protein Position']!);
    const within = p.isNull(row['Mutation Position']!) ? null : firstInt(row['Mutation Position']!);
    if (protein === null || within === null) return null;
    return {
      transcript: p.text('Transcript', row.Transcript!)!,
      transcript_id: row.Transcript!,
      peptide: peptide(p, 'MT Epitope Seq', row),
      allele: p.text('HLA Allele', row['HLA Allele']!)!,
      affinity_nm: affinity(p, 'Best MT IC50 Score', row),
      percentile_rank: percentile(p, 'Best MT Percentile', row),
      start: protein - within + 1,
      wt_peptide:
        row['WT Epitope Seq'] === undefined
          ? null
          : (p.text('WT Epitope Seq', row['WT Epitope Seq'], { nullable: true })?.toUpperCase() ?? null),
    };
  },
};

const PVACSPLICE: Format = {
  name: 'pVACsplice all_epitopes',
  required: ['Transcript', 'HLA Allele', 'Epitope Seq', 'Best IC50 Score', 'Best Percentile', 'Protein Position'],
  known: [
    ...PVAC_COMMON,
    'Junction',
    'Junction Start',
    'Junction Stop',
    'Junction Score',
    'Junction Anchor',
    'Amino Acid Change',
    'WT Protein Length',
    'ALT Protein Length',
    'Frameshift Event',
    'Median IC50 Score',
    'Best IC50 Score Method',
    'Median Percentile',
    'Best Percentile Method',
    'Fasta Key',
  ],
  knownPattern: /^.+ (IC50 Score|Percentile)$/,
  parse(row, p) {
    const anchor = p.isNull(row['Protein Position']!) ? null : firstInt(row['Protein Position']!);
    if (anchor === null) return null;
    return {
      transcript: p.text('Transcript', row.Transcript!)!,
      transcript_id: row.Transcript!,
      peptide: peptide(p, 'Epitope Seq', row),
      allele: p.text('HLA Allele', row['HLA Allele']!)!,
      affinity_nm: affinity(p, 'Best IC50 Score', row),
      percentile_rank: percentile(p, 'Best Percentile', row),
      start: anchor,
      wt_peptide: null,
    };
  },
};

const AGGREGATED: Format = {
  name: 'pVACseq aggregated',
  required: ['Best Peptide', 'Best Transcript', 'Allele', 'IC50 MT', '%ile MT', 'AA Change'],
  known: [
    'ID',
    'Index',
    'Gene',
    'Num Passing Transcripts',
    'MANE Select',
    'Canonical',
    'TSL',
    'Pos',
    'Prob Pos',
    'Num Included Peptides',
    'Num Passing Peptides',
    'IC50 WT',
    '%ile WT',
    'RNA Expr',
    'RNA VAF',
    'Allele Expr',
    'RNA Depth',
    'DNA VAF',
    'Tier',
    'Ref Match',
    'Evaluation',
  ],
  knownPattern: /^(HLA-)?[A-Z0-9]+\*\d+:\d+/, // one column per HLA allele of the run, e.g. `E*01:01`
  parse(row, p) {
    if (row.Pos === undefined || p.isNull(row.Pos)) return null;
    const within = p.int('Pos', row.Pos, { min: 1 })!;
    const protein = firstInt(row['AA Change']!);
    if (protein === null) return null;
    const mt = peptide(p, 'Best Peptide', row);
    // A missense change (`E510Q`) names the reference residue: the wild-type epitope is the best
    // peptide with it put back. Other changes (indels) leave it unknown.
    const missense = /^([A-Z])\d+([A-Z])$/.exec(row['AA Change']!);
    const wt =
      missense && mt[within - 1] === missense[2] ? mt.slice(0, within - 1) + missense[1] + mt.slice(within) : null;
    return {
      transcript: p.text('Best Transcript', row['Best Transcript']!)!,
      transcript_id: row['Best Transcript']!,
      peptide: mt,
      allele: p.text('Allele', row.Allele!)!,
      affinity_nm: affinity(p, 'IC50 MT', row),
      percentile_rank: percentile(p, '%ile MT', row),
      start: protein - within + 1,
      wt_peptide: wt,
    };
  },
};

function perSequence(
  name: string,
  required: string[],
  known: string[],
  percentileColumn: string,
  transcriptFor: (seqNum: string) => string | null,
): Format {
  return {
    name,
    required,
    known,
    parse(row, p) {
      const transcript = transcriptFor(p.text('seq_num', row.seq_num!)!);
      if (transcript === null) return null;
      return {
        transcript,
        transcript_id: transcript,
        peptide: peptide(p, 'peptide', row),
        allele: p.text('allele', row.allele!)!,
        affinity_nm: affinity(p, 'ic50', row),
        percentile_rank: percentile(p, percentileColumn, row),
        start: p.int('start', row.start!, { min: 1 })!,
        wt_peptide: null,
      };
    },
  };
}

async function readFormat(file: string, format: Format): Promise<NativeNeoantigenRead> {
  const rows: Located<NativeNeoantigen>[] = [];
  const warnings: string[] = [];
  let skipped = 0;
  let checked = false;
  const known = new Set([...format.required, ...format.known]);
  for await (const { line, row } of readTsv(file, { required: format.required })) {
    if (!checked) {
      checked = true;
      const unknown = Object.keys(row).filter((c) => !known.has(c) && !format.knownPattern?.test(c));
      if (unknown.length)
        warnings.push(
          `${file}: ignoring ${unknown.length} column(s) unknown to the ${format.name} format: ${unknown.join(', ')}`,
        );
    }
    const record = format.parse(row, cellParsers(file, line));
    if (record === null || record.start < 1) {
      skipped += 1;
      continue;
    }
    rows.push({ record, file, line });
  }
  return { rows, skipped, warnings };
}

/** pVACseq `*.all_epitopes.tsv` (also `*.filtered.tsv`, same columns). */
export function readPvacseqAllEpitopes(file: string): Promise<NativeNeoantigenRead> {
  return readFormat(file, PVACSEQ);
}

/** pVACsplice `*.all_epitopes.tsv`; `start` is the alteration's Protein Position anchor (see header). */
export async function readPvacspliceAllEpitopes(file: string): Promise<NativeNeoantigenRead> {
  const read = await readFormat(file, PVACSPLICE);
  read.warnings.push(
    `${file}: pVACsplice gives no epitope offset; start is the alteration's Protein Position on the reference protein, not the epitope's first residue`,
  );
  return read;
}

/** pVACseq `*.all_epitopes.aggregated.tsv`: the best peptide per variant. */
export function readPvacseqAggregated(file: string): Promise<NativeNeoantigenRead> {
  return readFormat(file, AGGREGATED);
}

/** MHCflurry predictions as written by pVACtools' wrapper (`allele peptide ic50 percentile … seq_num start`). */
export function readMhcflurry(
  file: string,
  transcriptFor: (seqNum: string) => string | null,
): Promise<NativeNeoantigenRead> {
  return readFormat(
    file,
    perSequence(
      'MHCflurry',
      ['allele', 'peptide', 'ic50', 'percentile', 'seq_num', 'start'],
      ['mhcflurry_processing_score', 'mhcflurry_presentation_score', 'mhcflurry_presentation_percentile'],
      'percentile',
      transcriptFor,
    ),
  );
}

/** NetMHCpan predictions in IEDB-API tabular layout (`allele seq_num start end length peptide core icore ic50 rank`). */
export function readNetmhcpanIedb(
  file: string,
  transcriptFor: (seqNum: string) => string | null,
): Promise<NativeNeoantigenRead> {
  return readFormat(
    file,
    perSequence(
      'NetMHCpan (IEDB)',
      ['allele', 'seq_num', 'start', 'peptide', 'ic50', 'rank'],
      ['end', 'length', 'core', 'icore'],
      'rank',
      transcriptFor,
    ),
  );
}

/** A resolver from a file's transcript id (versioned or not) to the release's transcript id: exact
 * `transcript_id` match first, else the unversioned ENST id. */
export function releaseResolver(
  isoforms: Iterable<{ transcript_id: string; transcript_id_unversioned: string | null }>,
): (transcript: string) => string | null {
  const exact = new Set<string>();
  const byUnversioned = new Map<string, string>();
  for (const i of isoforms) {
    exact.add(i.transcript_id);
    if (i.transcript_id_unversioned) byUnversioned.set(i.transcript_id_unversioned, i.transcript_id);
  }
  return (transcript) =>
    exact.has(transcript) ? transcript : (byUnversioned.get(transcript.replace(/\.\d+$/, '')) ?? null);
}

/** Why placeByWildType() left a row out. */
export const WILD_TYPE_SKIPS = {
  mutant_in_release_protein: 'mutant epitope already in the release protein',
  wild_type_not_in_protein: 'wild-type epitope not in the release protein',
  wild_type_ambiguous: 'wild-type epitope more than once in the release protein',
  wild_type_unknown: 'wild-type epitope unknown',
} as const;
export type WildTypeSkip = keyof typeof WILD_TYPE_SKIPS;

/** Checks each row's wild-type epitope against the release protein (see the header): kept at its
 * start, moved to its unique occurrence, or skipped and counted. Rows whose transcript is not in the
 * release, or has no protein, pass through for rankAndMap and the track import to report. */
export function placeByWildType(
  rows: Located<NativeNeoantigen>[],
  resolve: (transcript: string) => string | null,
  proteinOf: (transcriptId: string) => string | null,
): { rows: Located<NativeNeoantigen>[]; moved: number; skipped: Record<WildTypeSkip, number> } {
  const skipped: Record<WildTypeSkip, number> = {
    mutant_in_release_protein: 0,
    wild_type_not_in_protein: 0,
    wild_type_ambiguous: 0,
    wild_type_unknown: 0,
  };
  const kept: Located<NativeNeoantigen>[] = [];
  let moved = 0;
  for (const row of rows) {
    const id = resolve(row.record.transcript);
    const protein = id === null ? null : proteinOf(id);
    if (protein === null) {
      kept.push(row);
      continue;
    }
    const { peptide, wt_peptide: wt, start } = row.record;
    const why: WildTypeSkip | null =
      protein.substr(start - 1, peptide.length) === peptide
        ? 'mutant_in_release_protein'
        : wt === null
          ? 'wild_type_unknown'
          : null;
    if (why) {
      skipped[why] += 1;
      continue;
    }
    if (protein.substr(start - 1, wt!.length) === wt) {
      kept.push(row);
      continue;
    }
    const first = protein.indexOf(wt!);
    if (first < 0) skipped.wild_type_not_in_protein += 1;
    else if (protein.indexOf(wt!, first + 1) >= 0) skipped.wild_type_ambiguous += 1;
    else {
      moved += 1;
      kept.push({ ...row, record: { ...row.record, start: first + 1 } });
    }
  }
  return { rows: kept, moved, skipped };
}

/** "38 moved to their wild-type epitope; skipped: 76 mutant epitope already in the release protein". */
export function describeWildTypeCheck(check: { moved: number; skipped: Record<WildTypeSkip, number> }): string {
  const skips = (Object.keys(check.skipped) as WildTypeSkip[])
    .filter((k) => check.skipped[k])
    .map((k) => `${check.skipped[k]} ${WILD_TYPE_SKIPS[k]}`);
  return `${check.moved} moved to their wild-type epitope${skips.length ? `; skipped: ${skips.join(', ')}` : ''}`;
}

/** pVACseq rows (all-epitopes or aggregated) on a release: transcript ids resolved with or without
 * version, each row placed by its wild-type epitope on the release protein, then ranked. */
export function pvacseqOnRelease(
  db: Db,
  rows: Located<NativeNeoantigen>[],
): ReturnType<typeof rankAndMap> & { check: ReturnType<typeof placeByWildType> } {
  const resolve = releaseResolver(
    db.prepare('SELECT transcript_id, transcript_id_unversioned FROM isoforms').all() as {
      transcript_id: string;
      transcript_id_unversioned: string | null;
    }[],
  );
  const proteins = releaseProteins(db);
  const check = placeByWildType(rows, resolve, (id) => proteins.get(id) ?? null);
  return { ...rankAndMap(check.rows, resolve), check };
}

/** Maps file transcript ids to release ids and orders the records (transcript, start, best affinity
 * first); rows whose transcript is not in the release are dropped and counted. */
export function rankAndMap(
  rows: Located<NativeNeoantigen>[],
  resolve: (transcript: string) => string | null,
): { located: Located<NeoantigenRecord>[]; unmapped: number } {
  let unmapped = 0;
  const located: Located<NeoantigenRecord>[] = [];
  for (const { record, file, line } of rows) {
    const id = resolve(record.transcript);
    if (id === null) {
      unmapped += 1;
      continue;
    }
    const { transcript: _transcript, wt_peptide: _wt, ...rest } = record;
    located.push({ record: { ...rest, transcript_id: id }, file, line });
  }
  const key = (n: number | null) => (n === null ? Infinity : n);
  located.sort((a, b) => {
    const x = a.record;
    const y = b.record;
    if (x.transcript_id !== y.transcript_id) return x.transcript_id < y.transcript_id ? -1 : 1;
    return (
      x.start - y.start ||
      key(x.affinity_nm) - key(y.affinity_nm) ||
      key(x.percentile_rank) - key(y.percentile_rank) ||
      (a.line ?? 0) - (b.line ?? 0)
    );
  });
  return { located, unmapped };
}
