// Reference isoforms (GENCODE): GTF for structure and names, optional SQANTI3 classification for the
// ORF and NMD call, optional protein FASTA for the sequence, optional genePred for the annotated CDS.
// One isoform at a time (core.ts visits them in transcript id order); genes are SQL over the staged
// GTF (reference-genes.ts).
import type { GenePredTranscript } from './gene-pred.js';
import type { GtfTranscript } from './gtf.js';
import type { SqantiRow } from './sqanti.js';
import { orfFromGtf, orfFromSqanti } from './orf.js';
import { referenceCdsFromGenePred, referenceCdsFromGtf } from './reference-cds.js';
import { unversioned, type IsoformRecord } from '../release-db/records.js';

/** What is the same for every isoform of the set. */
export interface ReferenceContext {
  /** Some transcript of the GTF has CDS features. */
  gtfHasCds: boolean;
  classificationFile: string | null;
  hasFasta: boolean;
  /** The genePred (its entries of the transcripts at hand); without it, the GTF's CDS features. */
  genePred: { file: string; transcripts: Map<string, GenePredTranscript> } | null;
  /** What the classification's iso_exp is (the quantification); null without a classification. */
  expressionSource: string | null;
}

const NMD_TYPE = 'nonsense_mediated_decay';

/** NMD rule for reference isoforms: GENCODE's transcript_type says NMD → true; else SQANTI3's
 * predicted_NMD where the classification has a call; else a coding transcript whose GENCODE type is
 * known and not NMD → false; otherwise unknown (null). */
function nmdCall(
  t: GtfTranscript,
  cls: SqantiRow | undefined,
  coding: boolean | null,
): [boolean | null, string | null] {
  if (t.transcriptType === NMD_TYPE) return [true, 'transcript_type'];
  if (cls && cls.predictedNmd !== null) return [cls.predictedNmd, 'sqanti3'];
  if (t.transcriptType && coding) return [false, 'transcript_type'];
  return [null, null];
}

/** The isoform of reference transcript `t`, from its classification row and its protein, if any. */
export function referenceIsoform(
  t: GtfTranscript,
  cls: SqantiRow | undefined,
  fasta: { sequence: string; stop: boolean } | null,
  ctx: ReferenceContext,
): IsoformRecord {
  const id = t.transcriptId;
  const geneId = unversioned(t.geneId);
  const sequence = fasta?.sequence ?? cls?.orfSequence?.replace(/\*$/, '') ?? null;
  const coding: boolean | null = cls
    ? cls.coding
    : t.cdsLength > 0 || sequence !== null
      ? true
      : ctx.gtfHasCds || ctx.hasFasta
        ? false
        : null;
  let proteinLength: number | null = null;
  if (coding) {
    if (sequence !== null) proteinLength = sequence.length;
    else if (cls?.orfLength) proteinLength = cls.orfLength - (cls.orfSequence?.endsWith('*') ? 1 : 0);
    // The whole codons of the CDS features, read in the frame the 5′-most one's phase sets: a CDS
    // whose start the GTF lacks can begin with the last bases of a codon.
    else if (t.cds) proteinLength = Math.floor((t.cdsLength - t.cds.phase) / 3);
  }
  const [nmd, nmdSource] = nmdCall(t, cls, coding);
  const protein = { sequence: coding ? sequence : null, stop: fasta ? fasta.stop : null };
  const orf = !coding ? null : cls ? orfFromSqanti(t, cls, ctx.classificationFile!, protein) : orfFromGtf(t, sequence);
  return {
    transcript_id: id,
    transcript_id_unversioned: unversioned(id) === id ? null : unversioned(id),
    transcript_name: t.transcriptName,
    transcript_name_source: 'gtf',
    gene_id: geneId,
    source: 'reference',
    transcript_type: t.transcriptType,
    structural_category: null,
    associated_transcript: null,
    associated_genes: [geneId],
    chromosome: t.chromosome,
    strand: t.strand,
    start: t.start,
    end: t.end,
    length: t.length,
    exon_count: t.exonCount,
    coding,
    protein_length: proteinLength,
    protein_sequence: coding ? sequence : null,
    nmd,
    nmd_source: nmdSource,
    expression_tpm: cls?.isoExp ?? null,
    expression_source: cls?.isoExp != null ? ctx.expressionSource : null,
    tags: t.tags,
    exons: t.exons,
    orf,
    reference_cds: ctx.genePred ? referenceCdsFromGenePred(t, ctx.genePred) : referenceCdsFromGtf(t),
    // SQANTI3's QC compares a long read with the reference; a reference transcript compared with
    // itself says nothing, so reference isoforms carry none.
    qc: null,
  };
}
