// GET /api/v1/isoforms/{transcript_id}: the isoform record, by transcript id or name.
import { treePaths } from '../contract/tree.js';
import { fileAnswer, resolveIsoform, type RouteHandler } from './context.js';

export const isoform: RouteHandler = async (route) => {
  const id = await resolveIsoform(route);
  return typeof id === 'string' ? fileAnswer(route, treePaths.isoform(id)) : id;
};
