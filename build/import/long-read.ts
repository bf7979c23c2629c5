// Long-read isoforms (SQANTI3 run on PacBio PB.x.y transcripts), attached to genes:
//  - associated_gene is one reference gene id → that gene;
//  - a fusion (`ENSG…_ENSG…`) → the first listed gene that is in the release; all are kept in
//    associated_genes;
//  - a novel locus (`novelGene_…`, SQANTI3's label for intergenic and antisense loci, or a gene id the
//    reference does not have) → a long-read-only gene whose id and symbol are that label.
import type { Gtf } from './gtf.js';
import { InputError } from './input.js';
import type { SqantiRow } from './sqanti.js';
import { orfFromSqanti } from './orf.js';
import { compareNatural, unversioned, type GeneRecord, type IsoformRecord } from '../release-db/records.js';

export interface LongReadInputs {
  gtf: Gtf;
  classification: { file: string; rows: Map<string, SqantiRow> };
  fasta: { file: string; sequences: Map<string, string>; stops: Set<string> } | null;
  expressionSource: string | null;
}

function geneIdsOf(label: string): string[] {
  if (label.startsWith('novelGene')) return [];
  return label.split(/_(?=ENS)/).map(unversioned);
}

export function assembleLongRead(
  inputs: LongReadInputs,
  genes: Map<string, GeneRecord>,
): { isoforms: IsoformRecord[]; gtfOnly: number } {
  const { gtf, classification, fasta, expressionSource } = inputs;
  for (const id of fasta?.sequences.keys() ?? []) {
    if (!classification.rows.has(id))
      throw new InputError(fasta!.file, null, `sequence ${id} is not an isoform of ${classification.file}`);
  }
  const isoforms: IsoformRecord[] = [];
  const ids = [...classification.rows.keys()].sort(compareNatural);
  for (const id of ids) {
    const row = classification.rows.get(id)!;
    const t = gtf.transcripts.get(id);
    if (!t)
      throw new InputError(classification.file, row.line, `isoform ${id} has no transcript in ${gtf.file}`, 'isoform');
    if (t.exonCount !== row.exons || t.length !== row.length) {
      throw new InputError(
        classification.file,
        row.line,
        `isoform ${id} has ${row.exons} exons and ${row.length} nt here but ${t.exonCount} exons and ${t.length} nt in ${gtf.file}: are they from the same SQANTI3 run?`,
        'length',
      );
    }

    const associated = geneIdsOf(row.associatedGene);
    let geneId = associated.find((g) => genes.get(g)?.source === 'reference');
    if (!geneId) {
      geneId = row.associatedGene;
      const gene = genes.get(geneId);
      if (!gene) {
        genes.set(geneId, {
          gene_id: geneId,
          gene_id_versioned: null,
          symbol: row.associatedGene,
          biotype: null,
          source: 'long_read',
          chromosome: t.chromosome,
          strand: t.strand,
          start: t.start,
          end: t.end,
          canonical_transcript_id: null,
          canonical_rule: null,
        });
      } else {
        gene.start = Math.min(gene.start, t.start);
        gene.end = Math.max(gene.end, t.end);
      }
    }

    const sequence = row.coding ? (fasta?.sequences.get(id) ?? row.orfSequence?.replace(/\*$/, '') ?? null) : null;
    const proteinLength = !row.coding
      ? null
      : sequence !== null
        ? sequence.length
        : row.orfLength !== null
          ? row.orfLength - (row.orfSequence?.endsWith('*') ? 1 : 0)
          : null;
    isoforms.push({
      transcript_id: id,
      transcript_id_unversioned: null,
      transcript_name: null,
      transcript_name_source: 'generated',
      gene_id: geneId,
      source: 'long_read',
      transcript_type: null,
      structural_category: row.structuralCategory,
      associated_transcript: row.associatedTranscript,
      associated_genes: associated.length ? associated : [row.associatedGene],
      chromosome: t.chromosome,
      strand: t.strand,
      start: t.start,
      end: t.end,
      length: row.length,
      exon_count: row.exons,
      coding: row.coding,
      protein_length: proteinLength,
      protein_sequence: sequence,
      nmd: row.predictedNmd,
      nmd_source: row.predictedNmd === null ? null : 'sqanti3',
      expression_tpm: row.isoExp,
      expression_source: row.isoExp !== null ? expressionSource : null,
      tags: [],
      exons: t.exons,
      orf: row.coding
        ? orfFromSqanti(t, row, classification.file, {
            sequence,
            stop: fasta?.sequences.has(id) ? fasta.stops.has(id) : null,
          })
        : null,
      qc: row.qc,
    });
  }
  const gtfOnly = [...gtf.transcripts.keys()].filter((id) => !classification.rows.has(id)).length;
  return { isoforms, gtfOnly };
}
