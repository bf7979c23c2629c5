// GENCODE / SQANTI3 GTF reader. Keeps what the atlas needs: genes (from `gene` lines when present),
// transcripts with their attributes and tags, their exons, and the span of their CDS.
import { InputError, readLines } from './input.js';

export interface GtfTranscript {
  transcriptId: string;
  geneId: string;
  geneName: string | null;
  geneType: string | null;
  transcriptType: string | null;
  transcriptName: string | null;
  /** GENCODE's `protein_id` (ENSP…), on coding transcripts. */
  proteinId: string | null;
  /** GENCODE's `hgnc_id` (HGNC:n) of the transcript's gene, where the gene has one. */
  hgncId: string | null;
  tags: string[];
  chromosome: string;
  strand: '+' | '-';
  start: number;
  end: number;
  exonCount: number;
  /** Sum of exon lengths (nt). */
  length: number;
  /** Exons as [start, end] (1-based, inclusive) in transcript order: 5′ to 3′, so descending
   * coordinates on the minus strand. */
  exons: [number, number][];
  /** Sum of CDS lengths (nt); GENCODE CDS features exclude the stop codon. */
  cdsLength: number;
  /** Where the transcript has CDS features: their genomic span plus the stop codon's; whether the GTF
   * annotates its start and its stop codon (features covering all 3 nt: a codon a region clip cut is
   * not annotated); `phase`, the phase of its 5′-most CDS feature, the bases before its first whole
   * codon (0 where the GTF gives none). */
  cds: { start: number; end: number; startCodon: boolean; stopCodon: boolean; phase: number } | null;
  line: number;
}

export interface GtfGene {
  geneId: string;
  geneName: string | null;
  geneType: string | null;
  /** GENCODE's `hgnc_id` (HGNC:n), where the gene has one. */
  hgncId: string | null;
  chromosome: string;
  strand: '+' | '-';
  start: number;
  end: number;
}

export interface Gtf {
  file: string;
  /** Things worth a curator's look that do not stop the import. */
  warnings: string[];
  transcripts: Map<string, GtfTranscript>;
  genes: Map<string, GtfGene>;
}

// Values are quoted strings, or bare numbers/words such as `level 2` and `exon_number 1`.
const ATTRIBUTE = /\s*([A-Za-z_][A-Za-z0-9_]*)\s+(?:"([^"]*)"|([A-Za-z0-9._:+-]+))\s*(?:;|$)/y;

/** Parses `key "value"; key2 "v2"; tag "a"; tag "b";` — repeated keys (tag) are collected. */
export function parseAttributes(text: string, fail: (problem: string) => never): Map<string, string[]> {
  const out = new Map<string, string[]>();
  ATTRIBUTE.lastIndex = 0;
  let pos = 0;
  const trimmed = text.trimEnd();
  while (pos < trimmed.length) {
    ATTRIBUTE.lastIndex = pos;
    const m = ATTRIBUTE.exec(trimmed);
    if (!m) fail(`malformed attribute near "${trimmed.slice(pos, pos + 40)}" (expected key "value";)`);
    const value = m![2] ?? m![3];
    const list = out.get(m![1]);
    if (list) list.push(value);
    else out.set(m![1], [value]);
    pos = ATTRIBUTE.lastIndex;
  }
  return out;
}

/** What one GTF line says, as the readers store it. */
export type GtfEvent =
  | { kind: 'gene'; gene: GtfGene; line: number }
  | { kind: 'transcript'; transcript: GtfTranscript; line: number }
  | {
      kind: 'feature';
      transcriptId: string;
      feature: FeatureKind;
      start: number;
      end: number;
      /** A CDS feature's phase (0, 1 or 2), null where the GTF gives `.` and for other features. */
      phase: number | null;
      line: number;
    };

/** The features a transcript's structure is read from. */
export type FeatureKind = 'exon' | 'CDS' | 'start_codon' | 'stop_codon';

/** The lines of a GTF one at a time, checked line by line; what needs the whole file (duplicate
 * ids, exons without a transcript, overlaps) is for the reader that stores them. */
export async function* gtfEvents(path: string): AsyncGenerator<GtfEvent> {
  for await (const [line, text] of readLines(path)) {
    if (text === '' || text.startsWith('#')) continue;
    const fail = (problem: string): never => {
      throw new InputError(path, line, problem);
    };
    const f = text.split('\t');
    if (f.length !== 9) fail(`expected 9 tab-separated GTF fields, found ${f.length} (truncated line?)`);
    const [chromosome, , feature, startText, endText, , strand, phaseText, attributeText] = f;
    if (!/^\d+$/.test(startText) || !/^\d+$/.test(endText))
      fail(`start and end must be integers, found "${startText}" and "${endText}"`);
    const start = Number(startText);
    const end = Number(endText);
    if (start < 1 || end < start) fail(`invalid interval ${start}-${end}`);
    if (strand !== '+' && strand !== '-') fail(`strand must be + or -, found "${strand}"`);
    const attrs = parseAttributes(attributeText, fail);
    const one = (key: string) => attrs.get(key)?.[0] ?? null;
    const need = (key: string) => one(key) ?? fail(`${feature} line has no ${key} attribute`);
    const hgnc = () => {
      const id = one('hgnc_id');
      if (id !== null && !/^HGNC:\d+$/.test(id)) fail(`hgnc_id must be HGNC:n, found "${id}"`);
      return id;
    };

    if (feature === 'gene') {
      const geneId = need('gene_id');
      yield {
        kind: 'gene',
        gene: {
          geneId,
          geneName: one('gene_name'),
          geneType: one('gene_type') ?? one('gene_biotype'),
          hgncId: hgnc(),
          chromosome,
          strand: strand as '+' | '-',
          start,
          end,
        },
        line,
      };
    } else if (feature === 'transcript') {
      const transcriptId = need('transcript_id');
      yield {
        kind: 'transcript',
        transcript: {
          transcriptId,
          geneId: need('gene_id'),
          geneName: one('gene_name'),
          geneType: one('gene_type') ?? one('gene_biotype'),
          transcriptType: one('transcript_type') ?? one('transcript_biotype'),
          transcriptName: one('transcript_name'),
          proteinId: one('protein_id'),
          hgncId: hgnc(),
          tags: [...(attrs.get('tag') ?? [])].sort(),
          chromosome,
          strand: strand as '+' | '-',
          start,
          end,
          exonCount: 0,
          length: 0,
          exons: [],
          cdsLength: 0,
          cds: null,
          line,
        },
        line,
      };
    } else if (feature === 'exon' || feature === 'CDS' || feature === 'start_codon' || feature === 'stop_codon') {
      let phase: number | null = null;
      if (feature === 'CDS' && phaseText !== '.') {
        if (!/^[012]$/.test(phaseText)) fail(`a CDS line's phase must be 0, 1, 2 or ".", found "${phaseText}"`);
        phase = Number(phaseText);
      }
      yield { kind: 'feature', transcriptId: need('transcript_id'), feature, start, end, phase, line };
    }
  }
}

/** A transcript's features, as read. */
export interface FeatureSummary {
  /** Exons as [start, end], ascending by start (file order among equal starts). */
  exons: [number, number][];
  /** Sum of CDS feature lengths (nt). */
  cds: number;
  /** The span of the CDS features, with the phase of the leftmost and of the rightmost one. */
  cdsSpan: { start: number; end: number; startPhase: number; endPhase: number } | null;
  /** Nucleotides the start_codon and stop_codon features cover (a codon split by an intron has two). */
  startCodon: number;
  stopCodon: number;
  stopSpan: [number, number] | null;
}

export function emptySummary(): FeatureSummary {
  return { exons: [], cds: 0, cdsSpan: null, startCodon: 0, stopCodon: 0, stopSpan: null };
}

/** Adds one feature line to a transcript's summary: how both readers (in memory and staged) read them. */
export function addFeature(f: FeatureSummary, kind: FeatureKind, start: number, end: number, phase: number | null) {
  const length = end - start + 1;
  if (kind === 'exon') f.exons.push([start, end]);
  else if (kind === 'start_codon') f.startCodon += length;
  else if (kind === 'stop_codon') {
    f.stopCodon += length;
    f.stopSpan = f.stopSpan ? [Math.min(f.stopSpan[0], start), Math.max(f.stopSpan[1], end)] : [start, end];
  } else {
    f.cds += length;
    const span = f.cdsSpan;
    const p = phase ?? 0;
    if (!span) f.cdsSpan = { start, end, startPhase: p, endPhase: p };
    else {
      if (start < span.start) [span.start, span.startPhase] = [start, p];
      if (end > span.end) [span.end, span.endPhase] = [end, p];
    }
  }
}

const CODON = 3;

/** Sets a transcript's structure from its features: exons 5′ to 3′, their count and length, its CDS.
 * Only CDS features make a CDS: a start or stop codon feature alone (a region clip can leave one
 * nucleotide of a stop codon) codes for nothing. */
export function setStructure(t: GtfTranscript, f: FeatureSummary): void {
  const ordered = f.exons;
  if (t.strand === '-') ordered.reverse();
  t.exons = ordered;
  t.exonCount = ordered.length;
  t.length = ordered.reduce((sum, [s, e]) => sum + e - s + 1, 0);
  t.cdsLength = f.cds;
  const span = f.cdsSpan;
  if (!span) {
    t.cds = null;
    return;
  }
  // GENCODE's CDS features include the start codon and exclude the stop codon, which its own feature adds.
  const stopCodon = f.stopCodon === CODON;
  const stop = stopCodon ? f.stopSpan! : [span.start, span.end];
  t.cds = {
    start: Math.min(span.start, stop[0]),
    end: Math.max(span.end, stop[1]),
    startCodon: f.startCodon === CODON,
    stopCodon,
    phase: t.strand === '+' ? span.startPhase : span.endPhase,
  };
}

/** A transcript line without exon lines happens in region-clipped subsets (the GENCODE v49 sample
 * has 7): the transcript is taken as one exon spanning its line rather than dropping a real record.
 * Returns the warning that says so, or null for a transcript with exons. */
export function oneExonIfNone(path: string, t: GtfTranscript): string | null {
  if (t.exonCount > 0) return null;
  t.exonCount = 1;
  t.length = t.end - t.start + 1;
  t.exons = [[t.start, t.end]];
  return `${path}:${t.line}: transcript ${t.transcriptId} has no exon lines; taken as one exon spanning ${t.start}-${t.end}`;
}

/** The problem of two exons, ascending by start, that overlap. */
export const overlapProblem = (transcriptId: string, a: [number, number], b: [number, number]) =>
  `transcript ${transcriptId} has overlapping exons ${a.join('-')} and ${b.join('-')}`;

/** Reads a whole GTF into memory (for tools and tests on small files; the core import stages it). */
export async function readGtf(path: string): Promise<Gtf> {
  const transcripts = new Map<string, GtfTranscript>();
  const genes = new Map<string, GtfGene>();
  const features = new Map<string, { summary: FeatureSummary; line: number }>();

  for await (const event of gtfEvents(path)) {
    if (event.kind === 'gene') {
      const { geneId } = event.gene;
      if (genes.has(geneId)) throw new InputError(path, event.line, `duplicate gene id ${geneId}`);
      genes.set(geneId, event.gene);
    } else if (event.kind === 'transcript') {
      const { transcriptId } = event.transcript;
      const previous = transcripts.get(transcriptId);
      if (previous)
        throw new InputError(
          path,
          event.line,
          `duplicate transcript id ${transcriptId} (first defined at line ${previous.line})`,
        );
      transcripts.set(transcriptId, event.transcript);
    } else {
      const { transcriptId, feature, start, end, phase, line } = event;
      let acc = features.get(transcriptId);
      if (!acc) features.set(transcriptId, (acc = { summary: emptySummary(), line }));
      addFeature(acc.summary, feature, start, end, phase);
    }
  }

  for (const [transcriptId, acc] of features) {
    const t = transcripts.get(transcriptId);
    if (!t) throw new InputError(path, acc.line, `exon of transcript ${transcriptId}, which has no transcript line`);
    const ordered = acc.summary.exons.sort((a, b) => a[0] - b[0]);
    for (let i = 1; i < ordered.length; i++) {
      if (ordered[i][0] <= ordered[i - 1][1])
        throw new InputError(path, acc.line, overlapProblem(transcriptId, ordered[i - 1], ordered[i]));
    }
    setStructure(t, acc.summary);
  }
  const warnings: string[] = [];
  for (const t of transcripts.values()) {
    const warning = oneExonIfNone(path, t);
    if (warning) warnings.push(warning);
  }
  if (transcripts.size === 0) throw new InputError(path, null, NO_TRANSCRIPTS);
  return { file: path, warnings, transcripts, genes };
}

export const NO_TRANSCRIPTS = 'no transcript lines found: is this a GTF file?';
