// The OpenAPI document of the release, rendered last: its examples are records of this release, read
// back from the files just written: for every route declared as a file, its file for one gene or one
// isoform (the route table's example when the release has it), and the release metadata.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { buildOpenApi, type OpenApiExamples } from '../../edge/contract/openapi.js';
import { isKeyedFile, keyedFileRoutes, routes, type Route } from '../../edge/contract/routes.js';
import { keyedFilePath, namedFilePath, treePaths } from '../../edge/contract/tree.js';
import type { ReleaseBody } from '../../edge/contract/schemas.js';
import type { TreeWriter } from './tree-writer.js';

interface ExampleCandidates {
  genes: { gene_id: string; symbol: string }[];
  isoforms: { transcript_id: string; gene_id: string }[];
}

export async function renderOpenApi(w: TreeWriter, release: ReleaseBody, candidates: ExampleCandidates): Promise<void> {
  await w.flush();
  const written = new Set(w.entries.map((e) => e.path));
  const read = (path: string) =>
    written.has(path) ? (JSON.parse(readFileSync(join(w.root, path), 'utf8')) as unknown) : undefined;
  // The example the table gives the path parameter of the routes keyed by a gene, or an isoform.
  const wanted = (per: 'gene' | 'isoform') => keyedFileRoutes.find((r) => r.file.per === per)?.pathParams[0].example;
  const isoformRoutes = keyedFileRoutes.filter((r) => r.file.per === 'isoform');

  // The route table's examples when this release has them (a symbol only if one gene has it); else
  // its first gene, and its first isoform with every file.
  const symbols = new Map<string, number>();
  for (const g of candidates.genes) symbols.set(g.symbol, (symbols.get(g.symbol) ?? 0) + 1);
  const gene =
    candidates.genes.find((g) => g.symbol === wanted('gene') && symbols.get(g.symbol) === 1) ?? candidates.genes[0];
  const isoform =
    candidates.isoforms.find((i) => i.transcript_id === wanted('isoform')) ??
    candidates.isoforms.find((i) => isoformRoutes.every((r) => written.has(keyedFilePath(r, i.transcript_id)))) ??
    candidates.isoforms[0];
  // What a keyed route's path parameter is in the examples, and the id that names its file.
  const example = {
    gene: gene && { param: gene.symbol, id: gene.gene_id },
    isoform: isoform && { param: isoform.transcript_id, id: isoform.transcript_id },
  };

  const examples: OpenApiExamples = { pathParams: {}, bodies: {} };
  for (const route of routes as readonly Route[]) {
    if (!route.file) continue;
    if (!isKeyedFile(route)) {
      examples.bodies[route.id as keyof OpenApiExamples['bodies']] = read(
        namedFilePath(route.file as { name: string }),
      );
      continue;
    }
    const chosen = example[route.file.per];
    if (!chosen) continue;
    examples.pathParams[route.pathParams[0].name] = chosen.param;
    examples.bodies[route.id as keyof OpenApiExamples['bodies']] = read(
      keyedFilePath(route, chosen.id, route.file.window === 'pages' ? 0 : undefined),
    );
  }
  await w.json(treePaths.openapi, buildOpenApi(release, examples));
}
