// GET /api/v1/isoforms/{transcript_id}/neoantigens?limit=: the best predicted neoantigens. The tree
// holds the top NEOANTIGEN_TOP per isoform; a smaller limit is a prefix of that list.
import { NEOANTIGEN_TOP, treePaths } from '../contract/tree.js';
import type { NeoantigenListBody } from '../contract/schemas.js';
import { bodyResponse, jsonBody } from '../responses.js';
import { fileAnswer, mustRead, resolveIsoform, type RouteHandler } from './context.js';

const decoder = new TextDecoder();

export const neoantigens: RouteHandler = async (route) => {
  const id = await resolveIsoform(route);
  if (typeof id !== 'string') return id;
  const path = treePaths.neoantigens(id);
  const limit = route.query.integers.limit;
  // A limit as large as the file's list is the file itself, served unparsed.
  if (limit >= NEOANTIGEN_TOP) return fileAnswer(route, path);
  const list = JSON.parse(decoder.decode((await mustRead(route.release, path)).body)) as NeoantigenListBody;
  const body: NeoantigenListBody = { ...list, limit, items: list.items.slice(0, limit) };
  return bodyResponse(route.request, jsonBody(body), { cacheControl: route.cacheControl });
};
