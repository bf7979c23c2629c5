// Requests that name each entry of the dispatch table (edge/contract/dispatch.ts): the tests that walk
// the table (dispatch.test.ts, adversary.test.ts) take their requests from here, so an entry added to
// the table is walked (and attacked) without a test being written for it. A file kind without samples
// does not compile.
import {
  dispatchTable,
  systemPaths,
  type AnswerLabel,
  type FileKindId,
  type SystemPathId,
} from '../../edge/contract/dispatch.js';
import { routes } from '../../edge/contract/routes.js';
import { DOCS_ASSETS } from '../../edge/contract/tree.js';
import { HISTORY_KEY, POINTER_KEY, objectKey } from '../../edge/contract/store-layout.js';
import { packKey } from '../../edge/contract/packs.js';

/** What the samples name: a release and its manifest, an isoform with a structure, and a pack when
 * the store has packs. */
export interface SampleFacts {
  release: string;
  manifestSha: string;
  structureId: string;
  packSha?: string;
}

/** The requests that name each file kind: a missing kind does not compile. */
export const fileSamples = (f: SampleFacts): { readonly [K in FileKindId]: string[] } => ({
  docs_file: [`/api/v1/docs/${DOCS_ASSETS[0]}`],
  structure_file: [`/structures/${f.structureId}.cif`, `/releases/${f.release}/structures/${f.structureId}.cif`],
  store_file: [
    `/${POINTER_KEY}`,
    `/${HISTORY_KEY}`,
    `/${objectKey(f.manifestSha)}`,
    ...(f.packSha ? [`/${packKey(f.packSha)}`] : []),
  ],
});

/** A path parameter's value in the samples: the isoform with a structure, the samples' release. */
const sampleValue = (p: { name: string; example: string }, f: SampleFacts) =>
  p.name === 'transcript_id' ? f.structureId : p.name === 'release' ? f.release : p.example;

/** The statuses an entry's samples are answered with where it is answered: 200 or 307, but 404 for
 * the changes of a release, which the samples' one release cannot have (it follows none, and a tree
 * has no history): release-changes.test.ts asks a store of several. */
export const servedStatuses = (label: string): number[] => (label === 'changes' ? [404] : [200, 307]);

/** A request for a route: its template with each parameter's example (the isoform, one with a
 * structure, so that every route answers 200 or 307), and its required query. */
export function routeSample(route: (typeof routes)[number], f: SampleFacts): string {
  let path = `/api/v1${route.path}`;
  for (const p of route.pathParams) path = path.replace(`{${p.name}}`, encodeURIComponent(sampleValue(p, f)));
  const required = route.stringParams.filter((p) => p.required);
  return required.length ? `${path}?${required.map((p) => `${p.name}=PRR5`).join('&')}` : path;
}

/** Every entry with the requests that name it. */
export const samples = (f: SampleFacts): { label: Exclude<AnswerLabel, 'other'>; paths: string[] }[] =>
  dispatchTable.map((entry) => ({
    label: entry.label,
    paths:
      entry.group === 'system'
        ? [systemPaths[entry.label as SystemPathId].path]
        : entry.group === 'file'
          ? fileSamples(f)[entry.label as FileKindId]
          : [routeSample(routes.find((r) => r.id === entry.label)!, f)],
  }));
