// The OpenAPI document of the release, rendered last: its examples are records of this release, read
// back from the files just written (a gene, its first page of isoforms, an isoform with its domains,
// neoantigens and PTM sites, the release metadata).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { buildOpenApi, type OpenApiExamples } from '../../edge/contract/openapi.js';
import { routes } from '../../edge/contract/routes.js';
import { treePaths } from '../../edge/contract/tree.js';
import type { ReleaseBody } from '../../edge/contract/schemas.js';
import type { TreeWriter } from './tree-writer.js';

interface ExampleCandidates {
  genes: { gene_id: string; symbol: string }[];
  isoforms: { transcript_id: string; gene_id: string }[];
}

export async function renderOpenApi(w: TreeWriter, release: ReleaseBody, candidates: ExampleCandidates): Promise<void> {
  await w.flush();
  const written = new Set(w.entries.map((e) => e.path));
  const read = (path: string) => (written.has(path) ? (JSON.parse(readFileSync(join(w.root, path), 'utf8')) as unknown) : undefined);
  const wanted = (name: string) => routes.flatMap((r) => r.pathParams).find((p) => p.name === name)?.example;

  // The route table's examples when this release has them; else its first gene and isoform.
  const symbols = new Map<string, number>();
  for (const g of candidates.genes) symbols.set(g.symbol, (symbols.get(g.symbol) ?? 0) + 1);
  const gene = candidates.genes.find((g) => g.symbol === wanted('symbol') && symbols.get(g.symbol) === 1) ?? candidates.genes[0];
  const isoform =
    candidates.isoforms.find((i) => i.transcript_id === wanted('transcript_id')) ??
    candidates.isoforms.find((i) => written.has(treePaths.domains(i.transcript_id)) && written.has(treePaths.neoantigens(i.transcript_id))) ??
    candidates.isoforms[0];
  const examples: OpenApiExamples = { pathParams: {}, bodies: { root: release, release } };
  if (gene) {
    examples.pathParams.symbol = gene.symbol;
    examples.bodies.gene = read(treePaths.gene(gene.gene_id));
    examples.bodies.geneIsoforms = read(treePaths.genePage(gene.gene_id, 0));
  }
  if (isoform) {
    examples.pathParams.transcript_id = isoform.transcript_id;
    examples.bodies.isoform = read(treePaths.isoform(isoform.transcript_id));
    examples.bodies.domains = read(treePaths.domains(isoform.transcript_id));
    examples.bodies.neoantigens = read(treePaths.neoantigens(isoform.transcript_id));
    examples.bodies.ptm = read(treePaths.ptm(isoform.transcript_id));
  }
  await w.json(treePaths.openapi, buildOpenApi(release, examples));
}
