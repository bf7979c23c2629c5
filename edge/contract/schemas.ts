// The JSON bodies of v1, stated once. Each schema is plain JSON Schema (2020-12) built with TypeBox,
// which also gives the matching TypeScript type: the renderer is type-checked against the same
// definition that the OpenAPI document publishes and the contract tests validate against.
import { Type, type Static, type TSchema } from '@sinclair/typebox';

const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);
const Count = Type.Integer({ minimum: 0 });
const Position = Type.Integer({ minimum: 1, description: "1-based position on the isoform's protein_sequence" });
/** A link the API writes: a named schema, so that the edge can find every link of a body from the
 * schema alone and carry a pinned request's release into it (edge/pinning.ts). */
export const LinkSchema = Type.String({
  $id: 'Link',
  description:
    'Root-relative URL of a related resource. In an answer to a request that named `release`, a link into the API carries that release.',
});
const Link = Type.Unsafe<string>(Type.Ref('Link'));

export const Provenance = Type.Union([Type.Literal('real'), Type.Literal('generated')], {
  $id: 'Provenance',
  description: '`generated`: produced by the seeded demo generator, not measured or predicted by a real tool.',
});

export const Metrics = Type.Object(
  {
    delta_length: Nullable(
      Type.Integer({
        description:
          'Protein length minus the protein length of the gene canonical isoform (aa). null for non-coding isoforms or when the gene has no coding canonical isoform.',
      }),
    ),
    nmd: Nullable(Type.Boolean({ description: 'Predicted nonsense-mediated decay target. null when unknown.' })),
    domains: Nullable(
      Type.Integer({
        minimum: 0,
        description: 'Pfam plus TED domains. null for non-coding isoforms or when the release has no domain track.',
      }),
    ),
    neoantigens: Nullable(
      Type.Integer({
        minimum: 0,
        description: 'Predicted neoantigen peptides (all, not only the top list). null when not applicable.',
      }),
    ),
    ptm: Nullable(
      Type.Integer({ minimum: 0, description: 'Post-translational modification sites. null when not applicable.' }),
    ),
    plddt: Nullable(
      Type.Number({
        minimum: 0,
        maximum: 100,
        description: 'Mean pLDDT of the predicted structure. null without a structure.',
      }),
    ),
  },
  { $id: 'Metrics', additionalProperties: false },
);

export const Source = Type.Union([Type.Literal('reference'), Type.Literal('long_read')]);

export const IsoformSummary = Type.Object(
  {
    transcript_id: Type.String(),
    transcript_name: Type.String(),
    source: Source,
    canonical: Type.Boolean(),
    protein_length: Nullable(Type.Integer({ minimum: 0, description: 'Amino acids, excluding the stop codon' })),
    metrics: Type.Ref('Metrics'),
    links: Type.Object({ self: Link }, { additionalProperties: false }),
  },
  { $id: 'IsoformSummary', additionalProperties: false },
);

export const CanonicalRule = Type.Union(
  [
    Type.Literal('MANE_Select'),
    Type.Literal('Ensembl_canonical'),
    Type.Literal('longest_annotated_cds'),
    Type.Literal('longest_coding'),
    Type.Literal('longest_transcript'),
  ],
  {
    description:
      'Which rule chose the canonical isoform, tried in this order: MANE_Select, the transcript with that GTF tag; Ensembl_canonical, the one with that tag; longest_annotated_cds, the longest CDS the reference annotates with both its start and stop codon (reference_cds), whatever the ORF prediction says; longest_coding, the longest predicted protein, a complete ORF before a partial one; longest_transcript, the longest reference transcript of a gene with no protein. Long-read isoforms are never canonical.',
  },
);

export const Xref = Type.Object(
  {
    database: Type.Union(
      [
        Type.Literal('Ensembl'),
        Type.Literal('NCBI Gene'),
        Type.Literal('HGNC'),
        Type.Literal('UniProt'),
        Type.Literal('AlphaFold DB'),
      ],
      { examples: ['NCBI Gene'] },
    ),
    id: Type.String({ examples: ['5594'] }),
    url: Type.String({ format: 'uri', examples: ['https://www.ncbi.nlm.nih.gov/gene/5594'] }),
  },
  { $id: 'Xref', additionalProperties: false, description: 'A record of the gene in another database' },
);

export const Gene = Type.Object(
  {
    gene_id: Type.String({
      description: 'Unversioned Ensembl gene id, or the SQANTI3 label of a novel long-read locus',
    }),
    gene_id_versioned: Nullable(Type.String()),
    symbol: Type.String(),
    name: Nullable(
      Type.String({
        description:
          'Full name (NCBI Gene or HGNC, per the release’s gene_info source); null where the source has none or its record contradicts the annotation (see xrefs)',
        examples: ['mitogen-activated protein kinase 1'],
      }),
    ),
    synonyms: Type.Array(Type.String(), {
      description: 'Other symbols of the gene (aliases and previous symbols); search finds the gene by them',
      examples: [['ERK', 'ERK2', 'PRKM1']],
    }),
    biotype: Nullable(Type.String({ description: 'GENCODE gene_type, where the GTF has it' })),
    gene_type: Nullable(
      Type.String({
        description:
          'The gene-info source’s type: NCBI Gene’s (protein-coding, ncRNA, pseudo, …) or HGNC’s locus group',
        examples: ['protein-coding'],
      }),
    ),
    xrefs: Type.Array(Type.Ref('Xref'), {
      description:
        'Ensembl, NCBI Gene, HGNC, UniProt and AlphaFold DB (for each UniProt accession) where known. HGNC is the id the GTF gives the gene (GENCODE hgnc_id), else the gene-info source’s. A gene-info record is left out where it contradicts the annotation: it lies on another chromosome, its own Ensembl links name other genes only, or it carries another gene’s symbol.',
    }),
    source: Source,
    chromosome: Type.String(),
    strand: Type.Union([Type.Literal('+'), Type.Literal('-')]),
    start: Type.Integer({ minimum: 1 }),
    end: Type.Integer({ minimum: 1 }),
    canonical_isoform: Nullable(
      Type.Object(
        { transcript_id: Type.String(), transcript_name: Type.String(), rule: CanonicalRule },
        { additionalProperties: false },
      ),
    ),
    isoform_count: Count,
    isoforms: Type.Array(Type.Ref('IsoformSummary')),
    links: Type.Object({ self: Link, isoforms: Link }, { additionalProperties: false }),
  },
  { $id: 'Gene', additionalProperties: false },
);

export const IsoformPage = Type.Object(
  {
    gene_id: Type.String(),
    symbol: Type.String(),
    total: Count,
    limit: Type.Integer({ minimum: 1, maximum: 100 }),
    offset: Count,
    next: Nullable(Link),
    items: Type.Array(Type.Ref('IsoformSummary')),
  },
  { $id: 'IsoformPage', additionalProperties: false },
);

export const Exon = Type.Object(
  {
    start: Type.Integer({ minimum: 1, examples: [21867322] }),
    end: Type.Integer({ minimum: 1, examples: [21867645] }),
  },
  {
    $id: 'Exon',
    additionalProperties: false,
    description: 'An exon on the genome, 1-based and inclusive (start ≤ end on either strand)',
  },
);

export const Orf = Type.Object(
  {
    start: Type.Integer({
      minimum: 1,
      description:
        'Genomic start, 1-based inclusive (start ≤ end on either strand); the stop codon is included when the ORF has one',
      examples: [21769204],
    }),
    end: Type.Integer({ minimum: 1, examples: [21867440] }),
    transcript_start: Type.Integer({
      minimum: 1,
      description: "The ORF's first nucleotide on the transcript, 1-based from its 5′ end",
      examples: [206],
    }),
    transcript_end: Type.Integer({
      minimum: 1,
      description: "The ORF's last nucleotide on the transcript (the stop codon's last when it has one)",
      examples: [1288],
    }),
    completeness: Type.Union(
      [
        Type.Literal('complete'),
        Type.Literal('5prime_partial'),
        Type.Literal('3prime_partial'),
        Type.Literal('internal'),
      ],
      {
        description:
          'complete: from a start codon (the protein begins with M) to a stop codon; 5prime_partial: no start codon, the ORF runs off the 5′ end of the transcript; 3prime_partial: no stop codon; internal: neither (TransDecoder’s terms). An ORF from a GTF (source gtf) has an end only where the GTF annotates it, the same rule at both ends: a start_codon (stop_codon) feature covering the codon and no cds_start_NF (cds_end_NF) tag, which always wins; a codon the GTF lacks, as where a region clip cut it, is never claimed.',
        examples: ['complete'],
      },
    ),
    source: Type.Union([Type.Literal('sqanti3'), Type.Literal('gtf')], {
      description:
        "sqanti3: SQANTI3's ORF prediction on the transcript sequence (TransDecoder2 in the SQANTI3 version of the demo data; its protein FASTA headers carry TransDecoder's ID.p1 ORF names), which may differ from the annotated CDS (matches_reference); gtf: the annotation's CDS features",
      examples: ['sqanti3'],
    }),
    matches_reference: Nullable(
      Type.Boolean({
        description:
          "true: this ORF's genomic start and end equal the isoform's reference_cds (both include the stop codon), so on this transcript's exons it is the annotated CDS, in the same frame, and encodes the annotated protein; false: they differ (start_vs_reference and stop_vs_reference say where). null: no reference_cds (long-read isoforms, or no CDS annotated).",
        examples: [true],
      }),
    ),
    start_vs_reference: Nullable(
      Type.Union([Type.Literal('same'), Type.Literal('upstream'), Type.Literal('downstream')], {
        description:
          "Where this ORF's 5′ end (its start codon's first base) lies against reference_cds's, along the transcript 5′ to 3′: upstream, an N-terminal extension or a start further 5′; downstream, an N-terminal truncation. null without a reference_cds.",
        examples: ['same'],
      }),
    ),
    stop_vs_reference: Nullable(
      Type.Union([Type.Literal('same'), Type.Literal('early'), Type.Literal('late')], {
        description:
          "Where this ORF's 3′ end lies against reference_cds's, along the transcript 5′ to 3′: early, the ORF ends before the annotated stop codon, as where a selenoprotein's selenocysteine UGA is read as a stop (such an ORF is complete on the transcript but not the annotated protein); late, it runs past it. null without a reference_cds.",
        examples: ['same'],
      }),
    ),
    noncoding_biotype: Nullable(
      Type.Boolean({
        description:
          'true: the ORF is a prediction on a transcript whose reference biotype is non-coding, such as a pseudogene or lncRNA; read the protein as a possibility, not an annotated product. The biotype is the transcript’s GENCODE type, else its gene’s; where the GTF has no types, a CDS the reference annotates for the transcript (reference_cds) or for any transcript of its gene makes it coding, and only a gene with none takes the gene-info source’s type (NCBI Gene’s). false: coding, or the ORF is the annotation’s own. null: the biotype is unknown.',
        examples: [false],
      }),
    ),
  },
  { $id: 'Orf', additionalProperties: false, description: 'The open reading frame that encodes protein_sequence' },
);

export const ReferenceCds = Type.Object(
  {
    start: Type.Integer({
      minimum: 1,
      description:
        'Genomic start of the annotated CDS, 1-based inclusive (start ≤ end on either strand); the stop codon is included, as a genePred states it (a GTF’s CDS features exclude it, its stop_codon feature adds it)',
      examples: [21769204],
    }),
    end: Type.Integer({ minimum: 1, examples: [21867440] }),
    start_status: Type.Union([Type.Literal('complete'), Type.Literal('incomplete'), Type.Literal('unknown')], {
      description:
        'Whether the annotation has the start codon (the 5′ end on the transcript, whatever the strand): genePred cdsStartStat/cdsEndStat cmpl, incmpl, unk; in a GTF, the cds_start_NF tag (incomplete, whatever the features), else a start_codon feature covering the codon (complete), else unknown',
      examples: ['complete'],
    }),
    end_status: Type.Union([Type.Literal('complete'), Type.Literal('incomplete'), Type.Literal('unknown')], {
      description:
        'Whether the annotation has the stop codon (the 3′ end): genePred cmpl, incmpl, unk; in a GTF, the cds_end_NF tag (incomplete, whatever the features), else a stop_codon feature covering the codon (complete), else unknown',
      examples: ['complete'],
    }),
    source: Type.Union([Type.Literal('genepred'), Type.Literal('gtf')], {
      description:
        "genepred: the reference's genePred-extended file (cdsStart, cdsEnd, cdsStartStat, cdsEndStat); gtf: its GTF's CDS, start_codon and stop_codon features",
      examples: ['genepred'],
    }),
  },
  {
    $id: 'ReferenceCds',
    additionalProperties: false,
    description:
      'The coding sequence the reference annotation states for this transcript, beside the predicted orf; it may differ from it (orf.matches_reference)',
  },
);

export const SqantiQc = Type.Object(
  {
    subcategory: Nullable(
      Type.String({
        description:
          'SQANTI3 subcategory within the structural category (e.g. reference_match, alternative_3end, intron_retention, mono-exon)',
        examples: ['at_least_one_novel_splicesite'],
      }),
    ),
    fsm_class: Nullable(
      Type.String({
        description:
          'SQANTI3 FSM_class: A, the gene has one isoform; B, one full-splice match among several isoforms; C, several isoforms and several matches',
        examples: ['C'],
      }),
    ),
    all_canonical: Nullable(
      Type.Boolean({
        description: 'Every splice junction is canonical (GT-AG, GC-AG, AT-AC); null for mono-exonic isoforms',
        examples: [true],
      }),
    ),
    rts_stage: Nullable(
      Type.Boolean({
        description: 'A junction may be an artefact of reverse-transcriptase template switching',
        examples: [false],
      }),
    ),
    diff_to_tss: Nullable(
      Type.Integer({
        description: 'Distance (nt) of the 5′ end from the associated reference transcript’s TSS; negative: upstream',
        examples: [-12],
      }),
    ),
    diff_to_tts: Nullable(
      Type.Integer({
        description: 'Distance (nt) of the 3′ end from the associated reference transcript’s TTS; negative: upstream',
        examples: [3],
      }),
    ),
    within_cage_peak: Nullable(
      Type.Boolean({
        description: 'The 5′ end lies within a CAGE peak (FANTOM5): support for a real transcription start',
        examples: [true],
      }),
    ),
    dist_to_cage_peak: Nullable(
      Type.Integer({ description: 'Distance (nt) from the 5′ end to the nearest CAGE peak', examples: [0] }),
    ),
    polya_motif: Nullable(
      Type.String({ description: 'The polyadenylation motif found upstream of the 3′ end', examples: ['AATAAA'] }),
    ),
    polya_motif_found: Nullable(
      Type.Boolean({
        description: 'A known polyA motif lies within 50 nt upstream of the 3′ end: support for a real transcript end',
        examples: [true],
      }),
    ),
    polya_dist: Nullable(
      Type.Integer({
        description: 'Position of the polyA motif relative to the 3′ end (nt; negative: upstream)',
        examples: [-18],
      }),
    ),
    full_length_reads: Nullable(
      Type.Integer({
        minimum: 0,
        description: 'Full-length long reads supporting the isoform (SQANTI3 FL)',
        examples: [4],
      }),
    ),
  },
  {
    $id: 'SqantiQc',
    additionalProperties: false,
    description: 'SQANTI3 quality attributes of a long-read isoform, from its classification file',
  },
);

export const Isoform = Type.Object(
  {
    transcript_id: Type.String({ description: 'ENST… (versioned) or PB.x.y' }),
    transcript_id_unversioned: Nullable(Type.String()),
    transcript_name: Type.String(),
    transcript_name_source: Type.Union([Type.Literal('gtf'), Type.Literal('generated')]),
    gene_id: Type.String(),
    gene_symbol: Type.String(),
    source: Source,
    transcript_type: Nullable(Type.String()),
    structural_category: Nullable(Type.String({ description: 'SQANTI3 structural category (long-read isoforms)' })),
    associated_transcript: Nullable(
      Type.String({
        description:
          "SQANTI3's reference transcript of a long-read isoform; null for reference isoforms and where SQANTI3 says `novel` (no reference transcript matches)",
      }),
    ),
    associated_genes: Type.Array(Type.String(), {
      description: 'All genes SQANTI3 associates (more than one for fusions)',
    }),
    chromosome: Type.String(),
    strand: Type.Union([Type.Literal('+'), Type.Literal('-')]),
    start: Type.Integer({ minimum: 1 }),
    end: Type.Integer({ minimum: 1 }),
    length: Type.Integer({ minimum: 1, description: 'Transcript length (nt): sum of exon lengths' }),
    exon_count: Type.Integer({ minimum: 1 }),
    exons: Type.Array(Type.Ref('Exon'), {
      minItems: 1,
      description: 'Exons in transcript order, 5′ to 3′ (descending coordinates on the minus strand)',
    }),
    coding: Nullable(Type.Boolean()),
    protein_length: Nullable(Type.Integer({ minimum: 0 })),
    protein_sequence: Nullable(
      Type.String({
        pattern: '^[A-Z]+$',
        description:
          'The protein of a coding isoform (one-letter codes, without the stop): positions of domains, neoantigens and PTM sites are 1-based on it',
        examples: [
          'MAAAAAAGAGPEMVRGQVFDVGPRYTNLSYIGEGAYGMVCSAYDNVNKVRVAIKKISPFEHQTYCQRTLREIKILLRFRHENIIGINDIIRAPTIEQMKDVYIVQDLMETDLYKLLKTQHLSNDHICYFLYQILRGLKYIHSANVLHRDLKPSNLLLNTTCDLKICDFGLARVADPDHDHTGFLTEYVATRWYRAPEIMLNSKGYTKSIDIWSVGCILAEMLSNRPIFPGKHYLDQLNHILGILGSPSQEDLNCIINLKARNYLLSLPHKNKVPWNRLFPNADSKALDLLDKMLTFNPHKRIEVEQALAHPYLEQYYDPSDEPIAEAPFKFDMELDDLPKEKLKELIFEETARFQPGYRS',
        ],
      }),
    ),
    orf: Nullable(Type.Ref('Orf')),
    reference_cds: Nullable(
      Type.Ref('ReferenceCds', {
        description:
          'The CDS the reference annotation states for this transcript, kept where no ORF was predicted; null where it annotates none (in a GTF, no CDS features: a start_codon or stop_codon feature alone is not a CDS), and for long-read isoforms',
      }),
    ),
    canonical: Type.Boolean(),
    expression_tpm: Nullable(Type.Number({ minimum: 0 })),
    expression_source: Nullable(
      Type.String({
        description:
          'The quantification expression_tpm comes from. Each quantification is normalized on its own (its TPMs sum to 10^6), so compare TPMs only between isoforms with the same source.',
        examples: [
          'long-read quantification: SQANTI3 iso_exp of the PacBio run, the mean TPM of two kallisto quantifications of UHR short-read replicates over the 3,925 PacBio isoforms',
        ],
      }),
    ),
    tags: Type.Array(Type.String()),
    qc: Nullable(Type.Ref('SqantiQc', { description: 'SQANTI3 quality attributes; null for reference isoforms' })),
    metrics: Type.Ref('Metrics'),
    links: Type.Object(
      { self: Link, gene: Link, domains: Link, neoantigens: Link, ptm: Link, structure: Nullable(Link) },
      { additionalProperties: false },
    ),
  },
  { $id: 'Isoform', additionalProperties: false },
);

export const Domain = Type.Object(
  {
    source: Type.Union([Type.Literal('pfam'), Type.Literal('ted')]),
    accession: Type.String({ description: 'Pfam accession (PF…) or TED domain id' }),
    name: Nullable(Type.String({ description: 'Pfam family name or CATH label' })),
    start: Position,
    end: Position,
    segments: Type.Array(Type.Array(Position, { minItems: 2, maxItems: 2 }), {
      description: '[start, end] of each segment; discontinuous domains have several',
    }),
    score: Nullable(
      Type.Number({
        description:
          "Pfam: HMMER's bit score (higher is better); null for TED domains, whose method's score is in uncertainty or confidence",
      }),
    ),
    uncertainty: Nullable(
      Type.Number({
        description: "TED (Chainsaw): the method's boundary uncertainty, lower is better; null otherwise",
        examples: [0.12],
      }),
    ),
    confidence: Nullable(
      Type.Number({
        description: "TED (Merizo, UniDoc): the method's confidence, higher is better; null otherwise",
        examples: [0.87],
      }),
    ),
    evalue: Nullable(Type.Number({ minimum: 0 })),
    plddt: Nullable(
      Type.Number({
        minimum: 0,
        maximum: 100,
        description:
          "Mean pLDDT of the isoform's predicted structure over the domain's residues; null without a structure covering them",
      }),
    ),
    provenance: Type.Ref('Provenance'),
  },
  { $id: 'Domain', additionalProperties: false },
);

/** Every record of one kind on an isoform's protein (domains, PTM sites), with its length to read
 * positions against. */
const proteinFeatureList = <Id extends string>($id: Id, item: string, description: string) =>
  Type.Object(
    {
      transcript_id: Type.String(),
      transcript_name: Type.String(),
      protein_length: Nullable(Type.Integer({ minimum: 0 })),
      total: Count,
      items: Type.Array(Type.Ref(item)),
    },
    { $id, additionalProperties: false, description },
  );

export const DomainList = proteinFeatureList(
  'DomainList',
  'Domain',
  'Every Pfam and TED domain of an isoform, by start position',
);

export const Neoantigen = Type.Object(
  {
    rank: Type.Integer({ minimum: 1, description: 'Rank within the isoform, 1 = best' }),
    peptide: Type.String({ pattern: '^[ACDEFGHIKLMNPQRSTVWYUX]+$' }),
    length: Type.Integer({ minimum: 1 }),
    allele: Type.String(),
    affinity_nm: Nullable(Type.Number({ minimum: 0 })),
    percentile_rank: Nullable(Type.Number({ minimum: 0, maximum: 100 })),
    start: Position,
    end: Position,
    wt_peptide: Nullable(
      Type.String({
        pattern: '^[ACDEFGHIKLMNPQRSTVWYUX]+$',
        description:
          "The isoform's own residues at start–end (protein_sequence), against which the peptide is a mutant; null where the peptide runs past the protein's end",
        examples: ['WTHSRDPEG'],
      }),
    ),
    mutated_positions: Type.Array(Type.Integer({ minimum: 1 }), {
      description:
        'Positions within the peptide (1-based) where it differs from wt_peptide; empty for a generated peptide, which is the protein’s own sequence',
      examples: [[5]],
    }),
    provenance: Type.Ref('Provenance'),
  },
  { $id: 'Neoantigen', additionalProperties: false },
);

export const NeoantigenList = Type.Object(
  {
    transcript_id: Type.String(),
    transcript_name: Type.String(),
    total: Count,
    limit: Type.Integer({ minimum: 0, maximum: 50 }),
    items: Type.Array(Type.Ref('Neoantigen')),
  },
  { $id: 'NeoantigenList', additionalProperties: false },
);

export const PtmSite = Type.Object(
  {
    position: Type.Integer({
      minimum: 1,
      description: '1-based position on the isoform’s protein_sequence',
      examples: [27],
    }),
    residue: Type.String({
      pattern: '^[A-Z]$',
      description: 'The modified residue (one-letter code); protein_sequence has it at position',
      examples: ['R'],
    }),
    modification: Type.String({
      description: 'The modification, as UniProt names it',
      examples: ['Omega-N-methylarginine'],
    }),
    source: Type.String({
      description:
        'Where the site comes from (e.g. PTM-POSE, transferred by sequence from the canonical UniProt isoform)',
      examples: ['PTM-POSE'],
    }),
    provenance: Type.Ref('Provenance'),
  },
  { $id: 'PtmSite', additionalProperties: false },
);

export const PtmSiteList = proteinFeatureList(
  'PtmSiteList',
  'PtmSite',
  'Every PTM site of an isoform, by position then modification',
);

export const TrackSource = Type.Object(
  {
    track: Type.String(),
    source: Type.String(),
    version: Nullable(Type.String()),
    generated: Type.Boolean(),
    records: Count,
    description: Nullable(Type.String()),
    files: Type.Array(
      Type.Object(
        { name: Type.String(), sha256: Type.String({ pattern: '^[0-9a-f]{64}$' }) },
        { additionalProperties: false },
      ),
      { description: 'The input files of this source, with their SHA-256' },
    ),
  },
  { $id: 'TrackSource', additionalProperties: false },
);

export const Release = Type.Object(
  {
    service: Type.Literal('isoatlas'),
    api_version: Type.Literal('v1'),
    release: Type.String(),
    date: Type.String({ format: 'date' }),
    title: Type.String(),
    assembly: Type.String(),
    sources: Type.Array(Type.Ref('TrackSource')),
    generated_tracks: Type.Array(Type.String()),
    coverage: Type.Object(
      {
        description: Nullable(
          Type.String({
            description: "The curator's statement of what the release covers",
            examples: ['Human chromosome 22 only (GRCh38): genes elsewhere, such as TP53, are not in it.'],
          }),
        ),
        chromosomes: Type.Array(Type.String(), {
          description: 'The chromosomes (sequence names) the release has genes on',
          examples: [['chr22']],
        }),
      },
      {
        additionalProperties: false,
        description: 'What the release covers: a gene not found may simply be outside it',
      },
    ),
    counts: Type.Record(Type.String(), Count),
    links: Type.Record(Type.String(), Link),
  },
  { $id: 'Release', additionalProperties: false },
);

export const PublishedRelease = Type.Object(
  {
    release: Type.String(),
    current: Type.Boolean(),
    published_at: Nullable(
      Type.String({ format: 'date-time', description: 'When it was published; null for a tree served as it is' }),
    ),
    manifest_sha256: Nullable(
      Type.String({
        pattern: '^[0-9a-f]{64}$',
        description: "sha256 of the release's manifest, which lists every file's sha256",
      }),
    ),
  },
  { $id: 'PublishedRelease', additionalProperties: false },
);

export const ReleaseList = Type.Object(
  {
    current: Type.String(),
    releases: Type.Array(Type.Ref('PublishedRelease'), { minItems: 1 }),
  },
  { $id: 'ReleaseList', additionalProperties: false },
);

/** A link into the API that names its release already (`?release=`): not a Link, so a pinned answer
 * does not carry the request's release into it (edge/pinning.ts). */
const ReleaseLink = (description: string) =>
  Nullable(Type.String({ description, examples: ['/api/v1/isoforms/PB.3.1?release=2026.11'] }));

/** What names a gene or an isoform in a list of them (a search hit, a changed record). */
const RecordNamed = {
  type: Type.Union([Type.Literal('gene'), Type.Literal('isoform')]),
  id: Type.String({ description: "A gene's unversioned id or an isoform's transcript id" }),
  symbol: Type.String({ description: "The gene's symbol (an isoform's: its gene's)" }),
};

export const ChangedRecord = Type.Object(
  {
    ...RecordNamed,
    name: Nullable(
      Type.String({
        description:
          "A gene's full name (null where its record has none); an isoform's transcript name. From the record in `release`, or in `since` for a removed one.",
      }),
    ),
    change: Type.Union([Type.Literal('added'), Type.Literal('removed'), Type.Literal('changed')], {
      description:
        '`added`: its record is in `release` and not in `since`; `removed`: the other way round; `changed`: in both, with different bytes in at least one of its parts',
    }),
    parts: Type.Array(
      Type.Union([
        Type.Literal('record'),
        Type.Literal('isoforms'),
        Type.Literal('domains'),
        Type.Literal('neoantigens'),
        Type.Literal('ptm'),
        Type.Literal('structure'),
      ]),
      {
        minItems: 1,
        description:
          "Which of its resources' bytes differ: `record` (GET /genes/{symbol} or /isoforms/{transcript_id}), a gene's `isoforms` pages, an isoform's `domains`, `neoantigens`, `ptm` or `structure` file",
      },
    ),
    links: Type.Object(
      {
        since: ReleaseLink('The record in `since`; null when it was not there (added)'),
        release: ReleaseLink('The record in `release`; null when it is not there (removed)'),
      },
      { additionalProperties: false },
    ),
  },
  { $id: 'ChangedRecord', additionalProperties: false },
);

export const ReleaseChanges = Type.Object(
  {
    release: Type.String({ description: 'The release whose changes are listed' }),
    since: Type.String({ description: 'The release they are relative to: the one `release` follows, or `since`' }),
    total: Count,
    limit: Type.Integer({ minimum: 1, maximum: 100 }),
    offset: Count,
    next: Nullable(Link),
    items: Type.Array(Type.Ref('ChangedRecord')),
  },
  { $id: 'ReleaseChanges', additionalProperties: false },
);

export const SearchHit = Type.Object(
  {
    ...RecordNamed,
    name: Nullable(
      Type.String({
        description:
          "A gene's full name, as its record has it (`Gene.name`; null where the record has none); an isoform's transcript name",
        examples: ['mitogen-activated protein kinase 1', 'PRR5-201'],
      }),
    ),
    matched_field: Type.String({
      description:
        'The most telling field the query matched: `symbol`, `gene_id`, `gene_id_versioned`, `transcript_name`, `transcript_id`, `transcript_id_unversioned`, `name` (words of a gene’s full name) or `synonyms`',
    }),
    match: Type.Union([Type.Literal('exact'), Type.Literal('prefix'), Type.Literal('fuzzy')]),
    score: Type.Number(),
    link: Link,
  },
  { $id: 'SearchHit', additionalProperties: false },
);

export const SearchResults = Type.Object(
  {
    query: Type.String(),
    limit: Type.Integer({ minimum: 1, maximum: 25 }),
    total: Count,
    items: Type.Array(Type.Ref('SearchHit')),
  },
  { $id: 'SearchResults', additionalProperties: false },
);

const problemFields = {
  type: Type.String({ description: 'about:blank: the status says what kind of problem it is' }),
  title: Type.String({ description: 'The status phrase' }),
  status: Type.Integer({ minimum: 100, maximum: 599 }),
  detail: Type.String({ description: 'What exactly went wrong, and how to fix it' }),
  instance: Type.Optional(
    Type.String({
      description:
        'Path and query of the request, less `default_release` (absent from the CDN firewall’s 429, which cannot name the request)',
    }),
  ),
};

export const Problem = Type.Object(
  {
    ...problemFields,
    parameter: Type.Optional(Type.String({ description: '400: the query parameter at fault' })),
    search: Type.Optional(
      Type.String({
        description: '404 for a gene or isoform: a search for what was asked',
        examples: ['/api/v1/search?query=CHEKK2'],
      }),
    ),
    release: Type.Optional(
      Type.String({
        description: '404 for a gene or isoform: the release metadata, which says what the release covers',
        examples: ['/api/v1/release'],
      }),
    ),
    last_release: Type.Optional(
      Type.String({
        description:
          '404 for a gene or isoform: the newest kept release older than the one asked that holds it (GET /releases lists the kept ones)',
        examples: ['2026.11-chr22'],
      }),
    ),
    last_release_link: Type.Optional(
      Type.String({
        description: '404 for a gene or isoform: its record in `last_release`',
        examples: ['/api/v1/isoforms/PB.1234.5?release=2026.11-chr22'],
      }),
    ),
    current_id: Type.Optional(
      Type.String({
        description:
          '404 for an Ensembl id asked with a version the release does not have: the version it has (a 404, not a redirect: another version is another record)',
        examples: ['ENST00000400521.7'],
      }),
    ),
    current_link: Type.Optional(
      Type.String({
        description: '404 for an Ensembl id asked with another version: the record of `current_id`',
        examples: ['/api/v1/isoforms/ENST00000400521.7'],
      }),
    ),
    request_id: Type.Optional(
      Type.String({
        description: '500: the id the server logged the failure under; quote it when reporting the failure',
      }),
    ),
    limit: Type.Optional(
      Type.Object(
        { quota: Type.Integer(), window_seconds: Type.Integer() },
        { additionalProperties: false, description: '429: the limit that was reached' },
      ),
    ),
  },
  { $id: 'Problem', additionalProperties: true, description: 'RFC 9457 problem details' },
);

/** The 409 for a symbol several genes share: a problem listing the gene ids to choose from. */
export const MultipleChoices = Type.Object(
  {
    ...problemFields,
    choices: Type.Array(Type.Object({ gene_id: Type.String(), link: Link }, { additionalProperties: false }), {
      minItems: 2,
    }),
  },
  {
    $id: 'MultipleChoices',
    additionalProperties: false,
    description: 'RFC 9457 problem details with the candidate genes of a shared symbol',
  },
);

/** A refusal of the CDN's firewall (WAF, before any function runs): a static body, so it names no
 * request instance and carries no RateLimit-* headers; WAF offers no problem+json, so it is sent as
 * JSON. A 429 for a rate limit; a 400 for headers WAF cannot inspect whole (WAF cannot answer 431). */
const wafRefusal = (status: 429 | 400, title: string, detail: string) =>
  Type.Object(
    {
      type: Type.Literal('about:blank'),
      title: Type.Literal(title),
      status: Type.Literal(status),
      detail: Type.String({ description: detail }),
    },
    { additionalProperties: false },
  );
export const WafRefusal = Type.Union(
  [
    wafRefusal(
      429,
      'Too Many Requests',
      'The limit, its window and who it counts (one IP address, one API key of a tier)',
    ),
    wafRefusal(400, 'Bad Request', 'The bounds on header fields and their bytes the request went past'),
  ],
  { $id: 'WafRefusal', description: "The CDN's WAF refusal: RFC 9457 problem members, sent as application/json" },
);

/** Every named schema, for Ajv and for `components.schemas` of the OpenAPI document. */
export const schemas = {
  Link: LinkSchema,
  Provenance,
  Metrics,
  IsoformSummary,
  Xref,
  Gene,
  IsoformPage,
  Exon,
  Orf,
  ReferenceCds,
  SqantiQc,
  Isoform,
  Domain,
  DomainList,
  Neoantigen,
  NeoantigenList,
  PtmSite,
  PtmSiteList,
  TrackSource,
  Release,
  PublishedRelease,
  ReleaseList,
  ChangedRecord,
  ReleaseChanges,
  SearchHit,
  SearchResults,
  Problem,
  MultipleChoices,
  WafRefusal,
} as const;
export type SchemaName = keyof typeof schemas;

export type MetricsBody = Static<typeof Metrics>;
export type ReleaseListBody = { current: string; releases: Static<typeof PublishedRelease>[] };
export type IsoformSummaryBody = Omit<Static<typeof IsoformSummary>, 'metrics'> & { metrics: MetricsBody };
export type XrefBody = Static<typeof Xref>;
export type GeneBody = Omit<Static<typeof Gene>, 'isoforms' | 'xrefs'> & {
  isoforms: IsoformSummaryBody[];
  xrefs: XrefBody[];
};
export type IsoformPageBody = Omit<Static<typeof IsoformPage>, 'items'> & { items: IsoformSummaryBody[] };
export type ExonBody = Static<typeof Exon>;
export type OrfBody = Static<typeof Orf>;
export type SqantiQcBody = Static<typeof SqantiQc>;
export type ReferenceCdsBody = Static<typeof ReferenceCds>;
export type IsoformBody = Omit<Static<typeof Isoform>, 'metrics' | 'exons' | 'orf' | 'reference_cds' | 'qc'> & {
  metrics: MetricsBody;
  exons: ExonBody[];
  orf: OrfBody | null;
  reference_cds: ReferenceCdsBody | null;
  qc: SqantiQcBody | null;
};
export type DomainBody = Static<typeof Domain> & { provenance: 'real' | 'generated' };
export type DomainListBody = Omit<Static<typeof DomainList>, 'items'> & { items: DomainBody[] };
export type NeoantigenBody = Static<typeof Neoantigen> & { provenance: 'real' | 'generated' };
export type NeoantigenListBody = Omit<Static<typeof NeoantigenList>, 'items'> & { items: NeoantigenBody[] };
export type PtmSiteBody = Static<typeof PtmSite> & { provenance: 'real' | 'generated' };
export type PtmSiteListBody = Omit<Static<typeof PtmSiteList>, 'items'> & { items: PtmSiteBody[] };
export type TrackSourceBody = Static<typeof TrackSource>;
export type ReleaseBody = Omit<Static<typeof Release>, 'sources'> & { sources: TrackSourceBody[] };
export type SearchHitBody = Static<typeof SearchHit>;
export type ChangedRecordBody = Static<typeof ChangedRecord>;
export type ReleaseChangesBody = Omit<Static<typeof ReleaseChanges>, 'items'> & { items: ChangedRecordBody[] };
export type ProblemBody = Static<typeof Problem>;
