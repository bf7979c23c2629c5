// GET /api/v1/, /api/v1/release and /api/v1/openapi.json: files of the release, served as they are.
import { treePaths } from '../contract/tree.js';
import { fileAnswer, type RouteHandler } from './context.js';

export const release: RouteHandler = (route) => fileAnswer(route, treePaths.release);

export const openapi: RouteHandler = (route) => fileAnswer(route, treePaths.openapi);
