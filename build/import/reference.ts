// Reference isoforms (GENCODE): GTF for structure and names, optional SQANTI3 classification for the
// ORF and NMD call, optional protein FASTA for the sequence, optional genePred for the annotated CDS.
import type { GenePredTranscript } from './gene-pred.js';
import type { Gtf, GtfTranscript } from './gtf.js';
import { InputError } from './input.js';
import type { SqantiRow } from './sqanti.js';
import { orfFromGtf, orfFromSqanti } from './orf.js';
import { referenceCdsFromGenePred, referenceCdsFromGtf } from './reference-cds.js';
import { unversioned, type GeneRecord, type IsoformRecord } from '../release-db/records.js';

export interface ReferenceInputs {
  gtf: Gtf;
  classification: { file: string; rows: Map<string, SqantiRow> } | null;
  fasta: { file: string; sequences: Map<string, string>; stops: Set<string> } | null;
  /** The annotation's own CDS of each transcript; without it, the GTF's CDS features give it. */
  genePred?: { file: string; transcripts: Map<string, GenePredTranscript> } | null;
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

export function assembleReference(inputs: ReferenceInputs, genes: Map<string, GeneRecord>): IsoformRecord[] {
  const { gtf, classification, fasta, expressionSource, genePred = null } = inputs;
  const gtfHasCds = [...gtf.transcripts.values()].some((t) => t.cdsLength > 0);

  for (const [id, row] of classification?.rows ?? []) {
    if (!gtf.transcripts.has(id)) {
      throw new InputError(
        classification!.file,
        row.line,
        `isoform ${id} is not a transcript of ${gtf.file}`,
        'isoform',
      );
    }
  }
  for (const id of fasta?.sequences.keys() ?? []) {
    if (!gtf.transcripts.has(id))
      throw new InputError(fasta!.file, null, `sequence ${id} is not a transcript of ${gtf.file}`);
  }
  for (const [id, entry] of genePred?.transcripts ?? []) {
    if (!gtf.transcripts.has(id))
      throw new InputError(genePred!.file, entry.line, `transcript ${id} is not a transcript of ${gtf.file}`);
  }

  const isoforms: IsoformRecord[] = [];
  const ids = [...gtf.transcripts.keys()].sort();
  for (const id of ids) {
    const t = gtf.transcripts.get(id)!;
    const geneId = unversioned(t.geneId);
    let gene = genes.get(geneId);
    if (!gene) {
      const g = gtf.genes.get(t.geneId);
      gene = {
        gene_id: geneId,
        gene_id_versioned: t.geneId === geneId ? null : t.geneId,
        symbol: g?.geneName ?? t.geneName ?? geneId,
        biotype: g?.geneType ?? t.geneType,
        source: 'reference',
        chromosome: g?.chromosome ?? t.chromosome,
        strand: g?.strand ?? t.strand,
        start: g?.start ?? t.start,
        end: g?.end ?? t.end,
        canonical_transcript_id: null,
        canonical_rule: null,
      };
      genes.set(geneId, gene);
    } else if (!gtf.genes.has(t.geneId)) {
      // No gene line: the gene spans its transcripts.
      gene.start = Math.min(gene.start, t.start);
      gene.end = Math.max(gene.end, t.end);
    }

    const cls = classification?.rows.get(id);
    const sequence = fasta?.sequences.get(id) ?? cls?.orfSequence?.replace(/\*$/, '') ?? null;
    const coding: boolean | null = cls
      ? cls.coding
      : t.cdsLength > 0 || sequence !== null
        ? true
        : gtfHasCds || fasta
          ? false
          : null;
    let proteinLength: number | null = null;
    if (coding) {
      if (sequence !== null) proteinLength = sequence.length;
      else if (cls?.orfLength) proteinLength = cls.orfLength - (cls.orfSequence?.endsWith('*') ? 1 : 0);
      else if (t.cdsLength > 0) proteinLength = Math.floor(t.cdsLength / 3);
    }
    const [nmd, nmdSource] = nmdCall(t, cls, coding);
    const protein = { sequence: coding ? sequence : null, stop: fasta?.sequences.has(id) ? fasta.stops.has(id) : null };
    const orf = !coding ? null : cls ? orfFromSqanti(t, cls, classification!.file, protein) : orfFromGtf(t, sequence);
    isoforms.push({
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
      expression_source: cls?.isoExp != null ? expressionSource : null,
      tags: t.tags,
      exons: t.exons,
      orf,
      reference_cds: genePred ? referenceCdsFromGenePred(t, genePred) : referenceCdsFromGtf(t),
      // SQANTI3's QC compares a long read with the reference; a reference transcript compared with
      // itself says nothing, so reference isoforms carry none.
      qc: null,
    });
  }
  return isoforms;
}
