// The OpenAPI document of the release, rendered last: its examples are records of this release, read
// back from the files just written: for every route declared as a file, its file for one gene or one
// isoform (the route table's example when the release has it), and the release metadata.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { buildOpenApi, type OpenApiExamples } from '../../edge/contract/openapi.js';
import { isKeyedFile, keyedFileRoutes, routes, type Route } from '../../edge/contract/routes.js';
import { keyedFilePath, namedFilePath, treePaths } from '../../edge/contract/tree.js';
import type { ReleaseBody } from '../../edge/contract/schemas.js';
import type { Statement } from 'better-sqlite3';
import type { Db } from '../release-db/database.js';
import type { TreeWriter } from './tree-writer.js';

interface GeneCandidate {
  gene_id: string;
  symbol: string;
}
interface IsoformCandidate {
  transcript_id: string;
}

export async function renderOpenApi(w: TreeWriter, release: ReleaseBody, db: Db): Promise<void> {
  await w.flush();
  // The tree is rendered into a directory of its own: a file there is one this build wrote.
  const written = { has: (path: string) => existsSync(join(w.root, path)) };
  const read = (path: string) =>
    written.has(path) ? (JSON.parse(readFileSync(join(w.root, path), 'utf8')) as unknown) : undefined;
  // The example the table gives the path parameter of the routes keyed by a gene, or an isoform.
  const wanted = (per: 'gene' | 'isoform') => keyedFileRoutes.find((r) => r.file.per === per)?.pathParams[0].example;
  const isoformRoutes = keyedFileRoutes.filter((r) => r.file.per === 'isoform');
  /** The first isoform with every file, else the first isoform. */
  const firstWithEveryFile = (stmt: Statement): IsoformCandidate | undefined => {
    let first: IsoformCandidate | undefined;
    for (const i of stmt.iterate() as Iterable<IsoformCandidate>) {
      first ??= i;
      if (isoformRoutes.every((r) => written.has(keyedFilePath(r, i.transcript_id)))) return i;
    }
    return first;
  };

  // The route table's examples when this release has them (a symbol only if one gene has it); else
  // its first gene, and its first isoform with every file.
  const withSymbol = db
    .prepare('SELECT gene_id, symbol FROM genes WHERE symbol = ? ORDER BY gene_id LIMIT 2')
    .all(wanted('gene') ?? null) as GeneCandidate[];
  const gene =
    withSymbol.length === 1
      ? withSymbol[0]
      : (db.prepare('SELECT gene_id, symbol FROM genes ORDER BY gene_id LIMIT 1').get() as GeneCandidate | undefined);
  // The isoforms rendered: those of a gene of the release.
  const isoforms = 'FROM isoforms i JOIN genes g USING (gene_id)';
  const isoform =
    (db.prepare(`SELECT i.transcript_id ${isoforms} WHERE i.transcript_id = ?`).get(wanted('isoform') ?? null) as
      | IsoformCandidate
      | undefined) ?? firstWithEveryFile(db.prepare(`SELECT i.transcript_id ${isoforms} ORDER BY i.transcript_id`));
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
