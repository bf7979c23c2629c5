// PTM-POSE site tables → PtmRecord, transferred onto the release's isoforms by sequence.
//
// Input: PTM-POSE CSV (comma-separated, RFC 4180 quoting; the first column is the unnamed pandas index).
// Used columns: `Gene`, `UniProtKB Accession`, `Residue`, `PTM Position in Canonical Isoform` (a float
// such as `575.0`, on the canonical UniProt isoform), `Modification` (`;`-joined when a residue carries
// several, e.g. `N6-acetyllysine;Ubiquitination`: one record each), `Modification Class`. A site listed
// by several splice events (rows) is taken once per gene, position and modification (the first row's
// line is kept for messages).
// Limitation: the release's canonical isoform must be UniProt's canonical; where it is not (e.g. chr22
// SMARCB1: release canonical 394 aa vs Q12824-1 385 aa) the residue check fails and the sites are skipped.
//
// Mapping onto the release:
// 1. The gene's canonical isoform in the release (`canonical(gene)`) is assumed to be UniProt's
//    canonical isoform. The residue at the site's position must be the site's residue; otherwise (or
//    when the position is beyond that protein, or the gene has no canonical coding isoform) the site is
//    skipped and counted by reason. A confirmed site is recorded on the canonical isoform as is.
// 2. For each other coding isoform of the gene (`isoforms(gene)`), the site is transferred through the
//    window of ±7 residues around it on the canonical protein (shorter where the protein ends within 7
//    residues): if the window occurs exactly once in the other isoform's protein, the site is at the
//    same offset in that occurrence; if it does not occur (the region is spliced out or changed) or
//    occurs more than once (ambiguous), the site is not transferred to that isoform, counted by reason.
// Records carry source `PTM-POSE`.
import { InputError, readLines } from '../input.js';
import type { Located, PtmRecord } from '../tracks.js';
import type { Db } from '../../release-db/database.js';

export const PTM_POSE_SOURCE = 'PTM-POSE';
export const WINDOW_FLANK = 7;

export interface PtmPoseSite {
  gene: string;
  accession: string;
  residue: string;
  /** 1-based position on the canonical UniProt isoform. */
  position: number;
  modification: string;
  modificationClass: string | null;
}

export interface IsoformProtein {
  transcript_id: string;
  sequence: string;
}

export type PtmSkipReason = 'gene_not_in_release' | 'residue_mismatch' | 'window_absent' | 'window_repeated';

/** Splits CSV text into records of fields (RFC 4180: `"` quotes a field; `""` is a quote inside one;
 * quoted fields may contain commas and newlines). Returns null when a quote is still open at the end. */
export function parseCsvRecord(text: string): string[] | null {
  const fields: string[] = [];
  let field = '';
  let quoted = false;
  let i = 0;
  while (i < text.length) {
    const c = text[i]!;
    if (quoted) {
      if (c === '"') {
        if (text[i + 1] === '"') {
          field += '"';
          i += 2;
          continue;
        }
        quoted = false;
      } else field += c;
    } else if (c === '"' && field === '') quoted = true;
    else if (c === ',') {
      fields.push(field);
      field = '';
    } else field += c;
    i += 1;
  }
  if (quoted) return null;
  fields.push(field);
  return fields;
}

const REQUIRED = [
  'Gene',
  'UniProtKB Accession',
  'Residue',
  'PTM Position in Canonical Isoform',
  'Modification',
  'Modification Class',
];

/** Reads a PTM-POSE site CSV into one located site per gene, position and modification. */
export async function readPtmPose(
  file: string,
): Promise<{ sites: Located<PtmPoseSite>[]; rows: number; duplicates: number }> {
  let header: string[] | null = null;
  const sites: Located<PtmPoseSite>[] = [];
  const seen = new Set<string>();
  let rows = 0;
  let duplicates = 0;
  let pending = '';
  let pendingLine = 0;
  for await (const [n, text] of readLines(file)) {
    if (pending === '') pendingLine = n;
    const joined = pending === '' ? text : `${pending}\n${text}`;
    const fields = parseCsvRecord(joined);
    if (fields === null) {
      pending = joined; // a quoted field continues on the next line
      continue;
    }
    pending = '';
    const line = pendingLine;
    if (header === null) {
      if (joined === '') continue;
      header = fields;
      const missing = REQUIRED.filter((c) => !header!.includes(c));
      if (missing.length)
        throw new InputError(
          file,
          line,
          `missing required column(s): ${missing.join(', ')} (header has: ${header.join(', ')})`,
        );
      continue;
    }
    if (joined === '') continue;
    if (fields.length !== header.length)
      throw new InputError(
        file,
        line,
        `expected ${header.length} comma-separated fields (as in the header), found ${fields.length}`,
      );
    const row: Record<string, string> = {};
    header.forEach((c, i) => (row[c] = fields[i]!));
    rows += 1;
    const fail = (column: string, problem: string): never => {
      throw new InputError(file, line, problem, column);
    };
    const gene = row.Gene!.trim() || fail('Gene', 'a value is required');
    const residue = row.Residue!.trim().toUpperCase();
    if (!/^[A-Z]$/.test(residue)) fail('Residue', `expected one amino-acid letter, found "${row.Residue}"`);
    const rawPosition = row['PTM Position in Canonical Isoform']!;
    const position = Number(rawPosition);
    if (rawPosition.trim() === '' || !Number.isInteger(position) || position < 1)
      fail('PTM Position in Canonical Isoform', `expected a whole number ≥ 1, found "${rawPosition}"`);
    const modifications = row
      .Modification!.split(';')
      .map((m) => m.trim())
      .filter((m) => m);
    if (!modifications.length) fail('Modification', 'a value is required');
    for (const modification of modifications) {
      const key = `${gene}\u0000${position}\u0000${modification}`;
      if (seen.has(key)) {
        duplicates += 1;
        continue;
      }
      seen.add(key);
      sites.push({
        record: {
          gene,
          accession: row['UniProtKB Accession']!,
          residue,
          position,
          modification,
          // PTM-POSE repeats a multi-modification row once per class: the class is only unambiguous for one modification
          modificationClass: modifications.length === 1 ? row['Modification Class'] || null : null,
        },
        file,
        line,
      });
    }
  }
  if (pending !== '')
    throw new InputError(file, pendingLine, 'a quoted field is not closed before the end of the file');
  if (header === null) throw new InputError(file, null, 'file is empty: expected a header row');
  return { sites, rows, duplicates };
}

/** Transfers canonical-isoform sites onto the release's isoforms (see the header comment). */
export function transferPtmSites(
  sites: Located<PtmPoseSite>[],
  canonical: (gene: string) => IsoformProtein | null,
  isoforms: (gene: string) => IsoformProtein[],
): { located: Located<PtmRecord>[]; skipped: Record<PtmSkipReason, number> } {
  const skipped: Record<PtmSkipReason, number> = {
    gene_not_in_release: 0,
    residue_mismatch: 0,
    window_absent: 0,
    window_repeated: 0,
  };
  const located: Located<PtmRecord>[] = [];
  for (const { record: site, file, line } of sites) {
    const canon = canonical(site.gene);
    if (!canon) {
      skipped.gene_not_in_release += 1;
      continue;
    }
    if (canon.sequence[site.position - 1] !== site.residue) {
      skipped.residue_mismatch += 1;
      continue;
    }
    const emit = (transcript_id: string, position: number) =>
      located.push({
        record: {
          transcript_id,
          position,
          residue: site.residue,
          modification: site.modification,
          source: PTM_POSE_SOURCE,
        },
        file,
        line,
      });
    emit(canon.transcript_id, site.position);
    const from = Math.max(0, site.position - 1 - WINDOW_FLANK);
    const to = Math.min(canon.sequence.length, site.position + WINDOW_FLANK);
    const window = canon.sequence.slice(from, to);
    const offset = site.position - 1 - from;
    for (const other of isoforms(site.gene)) {
      if (other.transcript_id === canon.transcript_id) continue;
      const at = other.sequence.indexOf(window);
      if (at < 0) skipped.window_absent += 1;
      else if (other.sequence.indexOf(window, at + 1) >= 0) skipped.window_repeated += 1;
      else emit(other.transcript_id, at + offset + 1);
    }
  }
  return { located, skipped };
}

/** The `canonical` and `isoforms` lookups of transferPtmSites from a release DB, by gene symbol
 * (case-insensitive); only coding isoforms with a protein sequence take part. */
export function releaseProteins(db: Db): {
  canonical: (gene: string) => IsoformProtein | null;
  isoforms: (gene: string) => IsoformProtein[];
} {
  const canonicalOf = db.prepare(
    `SELECT i.transcript_id, i.protein_sequence AS sequence FROM genes g JOIN isoforms i ON i.transcript_id = g.canonical_transcript_id
     WHERE g.symbol = ? COLLATE NOCASE AND i.coding = 1 AND i.protein_sequence IS NOT NULL ORDER BY g.gene_id LIMIT 1`,
  );
  const isoformsOf = db.prepare(
    `SELECT i.transcript_id, i.protein_sequence AS sequence FROM genes g JOIN isoforms i ON i.gene_id = g.gene_id
     WHERE g.symbol = ? COLLATE NOCASE AND i.coding = 1 AND i.protein_sequence IS NOT NULL ORDER BY i.transcript_id`,
  );
  return {
    canonical: (gene) => (canonicalOf.get(gene) as IsoformProtein | undefined) ?? null,
    isoforms: (gene) => isoformsOf.all(gene) as IsoformProtein[],
  };
}
