// GET /api/v1/genes/{symbol}: the gene record, by symbol or gene id.
import { treePaths } from '../contract/tree.js';
import { fileAnswer, resolveGene, type RouteHandler } from './context.js';

export const gene: RouteHandler = async (route) => {
  const id = await resolveGene(route);
  return typeof id === 'string' ? fileAnswer(route, treePaths.gene(id)) : id;
};
