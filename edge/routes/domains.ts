// GET /api/v1/isoforms/{transcript_id}/domains: the Pfam and TED domains of an isoform.
import { treePaths } from '../contract/tree.js';
import { fileAnswer, resolveIsoform, type RouteHandler } from './context.js';

export const domains: RouteHandler = async (route) => {
  const id = await resolveIsoform(route);
  return typeof id === 'string' ? fileAnswer(route, treePaths.domains(id)) : id;
};
