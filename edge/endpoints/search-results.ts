// GET /api/v1/search?query=&limit=: search over gene symbols and ids, transcript ids and names
// (edge/search-engine.ts has the tiers and the scoring).
import { RequestProblem } from '../router.js';
import { bodyResponse, jsonBody } from '../responses.js';
import { search as searchRelease } from '../search-engine.js';
import type { RouteHandler } from './route-request.js';
import { redactKeys } from '../access/redaction.js';

export const search: RouteHandler = async (route) => {
  const text = route.query.strings.query;
  if (text.trim() === '')
    throw new RequestProblem(400, '"query" must contain something other than white space', 'query');
  const limit = route.query.integers.limit;
  const result = await searchRelease(route.release.data, text, limit);
  // The query is echoed as it was asked, less anything that could be a secret pasted into it (read
  // against the whole request: a key cut across two parameters leaves a piece in each).
  const url = new URL(route.request.url);
  return bodyResponse(
    route.request,
    jsonBody({ query: redactKeys(text, url.pathname + url.search), limit, total: result.total, items: result.items }),
    {
      cacheControl: route.cacheControl,
    },
  );
};
