// GET /api/v1/genes/{symbol}/isoforms?limit=&offset=: a page of a gene's isoforms. The tree holds
// the list pre-split into pages of ISOFORM_PAGE_SIZE: a request on that grid is a file as it is;
// any other window is cut from the pages it overlaps.
import { ISOFORM_PAGE_SIZE, links, treePaths } from '../contract/tree.js';
import type { IsoformPageBody } from '../contract/schemas.js';
import { bodyResponse, jsonBody } from '../responses.js';
import { fileAnswer, mustRead, resolveGene, type Release, type RouteHandler } from './context.js';

const decoder = new TextDecoder();

export const geneIsoforms: RouteHandler = async (route) => {
  const id = await resolveGene(route);
  if (typeof id !== 'string') return id;
  const { limit, offset } = route.query.integers;
  if (limit === ISOFORM_PAGE_SIZE && offset % ISOFORM_PAGE_SIZE === 0) {
    const path = treePaths.genePage(id, offset / ISOFORM_PAGE_SIZE);
    const file = await route.release.origin.read(path);
    // Past the last page there is no file: the window is cut (empty) like any other.
    if (file) return fileAnswer(route, path, nextLink(readPage(file.body).next));
  }
  const body = await window(route.release, id, limit, offset);
  return bodyResponse(route.request, jsonBody(body), { cacheControl: route.cacheControl, headers: nextLink(body.next) });
};

function readPage(bytes: Uint8Array): IsoformPageBody {
  return JSON.parse(decoder.decode(bytes)) as IsoformPageBody;
}

/** RFC 8288 Link to the next page, when there is one. */
function nextLink(next: string | null): Record<string, string> | undefined {
  return next ? { Link: `<${next}>; rel="next"` } : undefined;
}

/** The window [offset, offset + limit) of a gene's isoforms, from the pre-split pages it overlaps. */
async function window(release: Release, id: string, limit: number, offset: number): Promise<IsoformPageBody> {
  const page = async (n: number) => readPage((await mustRead(release, treePaths.genePage(id, n))).body);
  const first = await page(0);
  const firstPage = Math.floor(offset / ISOFORM_PAGE_SIZE);
  const lastPage = Math.min(Math.floor((offset + limit - 1) / ISOFORM_PAGE_SIZE), Math.max(0, Math.ceil(first.total / ISOFORM_PAGE_SIZE) - 1));
  const items = [];
  for (let n = firstPage; n <= lastPage; n++) items.push(...(n === 0 ? first : await page(n)).items);
  const start = offset - firstPage * ISOFORM_PAGE_SIZE;
  const next = offset + limit < first.total ? links.geneIsoforms(id, limit, offset + limit) : null;
  return {
    gene_id: first.gene_id,
    symbol: first.symbol,
    total: first.total,
    limit,
    offset,
    next,
    items: offset >= first.total ? [] : items.slice(start, start + limit),
  };
}
