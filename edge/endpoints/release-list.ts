// GET /api/v1/releases: the releases this atlas keeps (a store's history, or the one tree a server
// holds), oldest first, and which is current.
import { bodyResponse, jsonBody } from '../responses.js';
import type { RouteHandler } from './route-request.js';

export const releases: RouteHandler = async (route) =>
  bodyResponse(route.request, jsonBody(await route.releases.list()), { cacheControl: route.cacheControl });
