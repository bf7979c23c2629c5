// `release.json` (served at `/` and `/release`) and the OpenAPI document rendered for this release.
import { compareNatural } from '../release-db/records.js';
import { keyedFileRoutes, routes } from '../../edge/contract/routes.js';
import { API_PREFIX, treePaths } from '../../edge/contract/tree.js';
import type { ReleaseBody, TrackSourceBody } from '../../edge/contract/schemas.js';
import type { Db } from '../release-db/database.js';
import type { TreeWriter } from './tree-writer.js';
import { renderSpecs } from './resources.js';

interface SourceRow {
  track: string;
  source: string;
  version: string | null;
  generated: number;
  description: string | null;
  input_file: string;
  input_sha256: string;
  records: number;
}

const CORE_TRACKS = new Set(['reference', 'long_read']);

/** One entry per (track, source, version, generated): the files of a core track together describe
 * the same isoforms (records counted once); the files of an annotation track add up. */
function sources(db: Db): TrackSourceBody[] {
  const rows = db.prepare('SELECT * FROM track_sources ORDER BY track, source, input_file').all() as SourceRow[];
  const out = new Map<string, TrackSourceBody>();
  for (const r of rows) {
    const key = JSON.stringify([r.track, r.source, r.version, r.generated]);
    const entry = out.get(key) ?? {
      track: r.track,
      source: r.source,
      version: r.version,
      generated: r.generated === 1,
      records: 0,
      description: r.description,
      files: [],
    };
    entry.records = CORE_TRACKS.has(r.track) ? Math.max(entry.records, r.records) : entry.records + r.records;
    entry.files.push({ name: r.input_file, sha256: r.input_sha256 });
    out.set(key, entry);
  }
  return [...out.values()];
}

function counts(db: Db): Record<string, number> {
  const one = (sql: string) => (db.prepare(sql).pluck().get() as number) ?? 0;
  return {
    genes: one('SELECT count(*) FROM genes'),
    reference_genes: one("SELECT count(*) FROM genes WHERE source = 'reference'"),
    novel_genes: one("SELECT count(*) FROM genes WHERE source = 'long_read'"),
    isoforms: one('SELECT count(*) FROM isoforms'),
    reference_isoforms: one("SELECT count(*) FROM isoforms WHERE source = 'reference'"),
    long_read_isoforms: one("SELECT count(*) FROM isoforms WHERE source = 'long_read'"),
    coding_isoforms: one('SELECT count(*) FROM isoforms WHERE coding = 1'),
    // Each track a resource lists counts its records (resources.ts), in the route table's order.
    ...Object.fromEntries(
      keyedFileRoutes
        .map((r) => renderSpecs[r.id] as { counted?: { name: string; table: string } })
        .flatMap((spec) =>
          spec.counted ? [[spec.counted.name, one(`SELECT count(*) FROM ${spec.counted.table}`)]] : [],
        ),
    ),
    structures: one('SELECT count(*) FROM structures'),
  };
}

export function releaseBody(db: Db): ReleaseBody {
  const meta = Object.fromEntries(
    (db.prepare('SELECT key, value FROM release_meta').all() as { key: string; value: string }[]).map((r) => [
      r.key,
      r.value,
    ]),
  );
  const src = sources(db);
  const endpointLinks: Record<string, string> = {};
  for (const route of routes) endpointLinks[route.id] = `${API_PREFIX}${route.path === '/' ? '/' : route.path}`;
  return {
    service: 'isoatlas',
    api_version: 'v1',
    release: meta.release,
    date: meta.date,
    title: meta.title,
    assembly: meta.assembly,
    sources: src,
    generated_tracks: [...new Set(src.filter((s) => s.generated).map((s) => s.track))].sort(),
    coverage: {
      description: meta.coverage ?? null,
      chromosomes: (db.prepare('SELECT DISTINCT chromosome FROM genes').pluck().all() as string[]).sort(compareNatural),
    },
    counts: counts(db),
    links: endpointLinks,
  };
}

export async function renderRelease(db: Db, w: TreeWriter): Promise<ReleaseBody> {
  const body = releaseBody(db);
  await w.json(treePaths.release, body);
  return body;
}
