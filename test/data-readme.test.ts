// The counts data/README.md states, computed here from the shipped files (plain gunzip and split): a
// figure that drifts from its data fails.
import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import { join } from 'node:path';

const DATA = join(__dirname, '../data');
const readme = readFileSync(join(DATA, 'README.md'), 'utf8').replace(/\s+/g, ' ');
const rows = (file: string) =>
  gunzipSync(readFileSync(join(DATA, file)))
    .toString('utf8')
    .split('\n')
    .filter((l) => l && !l.startsWith('#'))
    .map((l) => l.split('\t'));
const table = (file: string) => {
  const [header, ...body] = rows(file);
  return body.map((r) => Object.fromEntries(header.map((h, i) => [h, r[i]])));
};
const n = (x: number) => x.toLocaleString('en-US');
const attr = (f: string[], key: string) => new RegExp(`${key} "([^"]+)"`).exec(f[8])?.[1];

describe('data/README.md counts', () => {
  it('chr22 GTF, classification and proteins', () => {
    const transcripts = rows('chr22/gencode.v38.basic_chr22_corrected.gtf.gz').filter((f) => f[2] === 'transcript');
    const genes = new Set(transcripts.map((f) => attr(f, 'gene_id')));
    const symbols = new Set(transcripts.map((f) => attr(f, 'gene_name')));
    expect(readme).toContain(
      `${n(transcripts.length)} transcripts of ${n(genes.size)} genes (${n(symbols.size)} symbols)`,
    );
    const faa = rows('chr22/gencode.v38.basic_chr22_corrected.faa.gz').filter((f) => f[0].startsWith('>'));
    expect(readme).toContain(`Predicted proteins of the ${n(faa.length)} coding reference transcripts`);
    const pacbio = table('chr22/UHR_chr22_classification.txt.gz');
    expect(readme).toContain(`SQANTI3 classification of ${n(pacbio.length)} PacBio isoforms`);
    const pacbioFaa = rows('chr22/UHR_chr22_corrected.faa.gz').filter((f) => f[0].startsWith('>'));
    expect(readme).toContain(`Their predicted proteins (${n(pacbioFaa.length)} coding)`);
  });

  it('genePred: transcripts and annotated CDS', () => {
    const genePred = rows('chr22/refAnnotation_gencode.v38.basic_chr22.genePred.gz');
    const withCds = genePred.filter((f) => f[5] !== f[6]);
    expect(readme).toContain(`one line per transcript (${n(genePred.length)};`);
    expect(readme).toContain(`${n(withCds.length)} annotated CDS`);
  });

  it('the long-read TPM against the first replicate', () => {
    const rep1 = new Map(table('chr22/UHR_Rep1_chr22_abundance.tsv.gz').map((r) => [r.target_id, Number(r.tpm)]));
    const pacbio = table('chr22/UHR_chr22_classification.txt.gz');
    const differ = pacbio.filter((r) => Math.abs(Number(r.iso_exp) - rep1.get(r.isoform)!) > 1e-3).length;
    expect(readme).toContain(`for ${n(differ)} of the ${n(pacbio.length)} isoforms`);
  });

  it('gene-info rows, genes and genes with several rows', () => {
    const info = table('gene-info/org.Hs.eg.db.chr22.tsv.gz');
    const perGene = new Map<string, typeof info>();
    for (const r of info) perGene.set(r.ensembl_gene_id, [...(perGene.get(r.ensembl_gene_id) ?? []), r]);
    const by = (how: string) => info.filter((r) => r.matched_by === how);
    const ensembl = by('ensembl');
    expect(readme).toContain(
      `(${n(ensembl.length)} rows of ${n(new Set(ensembl.map((r) => r.ensembl_gene_id)).size)} genes, \`matched_by\` \`ensembl\`)`,
    );
    expect(readme).toContain(`(${n(by('symbol').length)} rows, \`symbol\`)`);
    const several = [...perGene.values()].filter((g) => g.length > 1);
    const two = several.filter((g) => g.length === 2).length;
    const three = several.filter((g) => g.length === 3);
    expect(several.every((g) => g.length <= 3)).toBe(true);
    expect(three).toHaveLength(1);
    expect(readme).toContain(
      `${n(info.length)} rows of ${n(perGene.size)} genes: ${two} genes have two rows and ${three.length} has three (${three[0][0].symbol})`,
    );
  });
});
