// GET /api/v1/isoforms/{transcript_id}/ptm: the PTM sites of an isoform.
import { treePaths } from '../contract/tree.js';
import { fileAnswer, resolveIsoform, type RouteHandler } from './context.js';

export const ptm: RouteHandler = async (route) => {
  const id = await resolveIsoform(route);
  return typeof id === 'string' ? fileAnswer(route, treePaths.ptm(id)) : id;
};
