// GET /api/v1/search?query=&limit=: search over gene symbols and ids, transcript ids and names
// (edge/search-engine.ts has the tiers and the scoring).
import { RequestProblem } from '../router.js';
import { bodyResponse, jsonBody } from '../responses.js';
import { search as searchRelease } from '../search-engine.js';
import type { RouteHandler } from './route-request.js';
import { REDACTED_KEY, redactKeys } from '../access/key-format.js';

export const search: RouteHandler = async (route) => {
  const text = route.query.strings.query;
  if (text.trim() === '')
    throw new RequestProblem(400, '"query" must contain something other than white space', 'query');
  const limit = route.query.integers.limit;
  const result = await searchRelease(route.release.data, text, limit);
  // The query is echoed as it was asked, unless a key was pasted into it by mistake.
  const redacted = redactKeys(text);
  const echoed = redacted.includes(REDACTED_KEY) ? redacted : text;
  return bodyResponse(route.request, jsonBody({ query: echoed, limit, total: result.total, items: result.items }), {
    cacheControl: route.cacheControl,
  });
};
