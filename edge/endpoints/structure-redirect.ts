// GET /api/v1/isoforms/{transcript_id}/structure: a 307 to the mmCIF file of the predicted structure.
// The Location is the configured structure base plus the file's public path, or that path alone
// (root-relative): never built from the request's Host, so a cached redirect cannot be pointed
// elsewhere by whoever asked first. Also serves the files themselves (`/structures/<id>.cif`) for a
// local server or mirror; the CDN serves them from the bucket.
import { cacheControl } from '../contract/routes.js';
import { treePaths } from '../contract/tree.js';
import { fileKinds } from '../contract/dispatch.js';
import { bodyResponse, CORS_HEADERS, problem } from '../responses.js';
import { mustRead, resolveIsoform, type Release, type RouteHandler } from './route-request.js';
import { requestUrl } from '../request-url.js';

const MMCIF_TYPE = 'chemical/x-mmcif';

export const structure: RouteHandler = async (route) => {
  const id = await resolveIsoform(route, route.params.transcript_id);
  if (typeof id !== 'string') return id.answer();
  const entry = await route.release.data.structure(id);
  if (!entry)
    return problem(route.request, { status: 404, detail: `isoform ${id} has no predicted structure in this release` });
  const base = (route.structureBaseUrl ?? '').replace(/\/$/, '');
  const location = `${base}/${route.release.publicPath(entry.path)}`;
  return new Response(null, {
    status: 307,
    headers: { ...CORS_HEADERS, Location: location, 'Cache-Control': route.cacheControl },
  });
};

/** `/structures/<name>`: the mmCIF file of a structure the release lists, or 404. */
export async function structureFile(request: Request, release: Release, name: string): Promise<Response> {
  const id = name.endsWith('.cif') ? name.slice(0, -4) : null;
  const entry = id === null ? null : await release.data.structure(id);
  if (!entry || entry.path !== treePaths.structureFile(id!))
    return problem(request, { status: 404, detail: `no structure file ${name}` });
  const file = await mustRead(release, entry.path);
  return bodyResponse(request, file.body, {
    cacheControl: cacheControl.release,
    sha256: file.sha256,
    contentType: MMCIF_TYPE,
  });
}

/** The object holding a pinned release's structure file (the dispatch table's structure_file at its
 * release path: its sha256 and size), or a problem answer: what
 * the CDN's origin-request function needs to let CloudFront fetch the file from the store itself. */
export async function locateStructureFile(
  request: Request,
  releases: { get(release?: string): Promise<Release | null> },
): Promise<{ sha256: string; size: number } | Response> {
  const m = fileKinds.structure_file.match(requestUrl(request).pathname);
  if (m?.release == null)
    return problem(request, {
      status: 404,
      detail: 'release files are served at /releases/<release>/structures/<id>.cif',
    });
  const release = await releases.get(m.release);
  if (!release)
    return problem(request, {
      status: 404,
      detail: `no release ${m.release} in this atlas; GET /api/v1/release names the current one`,
    });
  const id = m.name.endsWith('.cif') ? m.name.slice(0, -4) : null;
  const entry = id === null ? null : await release.data.structure(id);
  const listed = entry && entry.path === treePaths.structureFile(id!) ? await release.origin.entry(entry.path) : null;
  if (!listed) return problem(request, { status: 404, detail: `no structure file ${m.name} in release ${m.release}` });
  return { sha256: listed.sha256, size: listed.size };
}
