// GET /api/v1/docs: the docs page (Swagger UI over this release's OpenAPI document). Its scripts and
// styles are files of the release, so the page works offline on a mirror and loads nothing from
// elsewhere, which its Content-Security-Policy also holds it to.
import { cacheControl } from '../contract/routes.js';
import { DOCS_ASSETS, DOCS_PAGE, contentTypeOf, links, treePaths } from '../contract/tree.js';
import { bodyResponse, problem } from '../responses.js';
import { clip } from '../access/redaction.js';
import { fileAnswer, mustRead, type Release, type RouteHandler } from './route-request.js';

/** Scripts and styles from this origin only; Swagger UI sets inline styles and shows data: icons. */
export const DOCS_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

export const docs: RouteHandler = (route) =>
  fileAnswer(route, treePaths.docs(DOCS_PAGE), {
    'Content-Security-Policy': DOCS_CSP,
    'X-Content-Type-Options': 'nosniff',
  });

/** `/api/v1/docs/<file>` (a file kind of the dispatch table, edge/contract/dispatch.ts). */
export async function docsAsset(request: Request, release: Release, name: string): Promise<Response> {
  if (!(DOCS_ASSETS as readonly string[]).includes(name))
    return problem(request, {
      status: 404,
      detail: `no file ${clip(name, 100)} in the docs; the docs page is ${links.docs()}`,
    });
  const file = await mustRead(release, treePaths.docs(name));
  return bodyResponse(request, file.body, {
    cacheControl: cacheControl.release,
    sha256: file.sha256,
    contentType: contentTypeOf(name),
    headers: { 'X-Content-Type-Options': 'nosniff' },
  });
}
