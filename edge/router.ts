// Matches request paths against the contract's route table and validates query parameters against
// each route's declared parameters and bounds.
import { PATH_SEGMENT_MAX, PATH_SEGMENT_PATTERN, routes, type Route } from './contract/routes.js';
import { clip } from './access/redaction.js';
import { API_PREFIX } from './contract/tree.js';

/** A route of the contract, with its literal id. */
export type ContractRoute = (typeof routes)[number];

export type Match = { route: ContractRoute; params: Record<string, string> };

export class RequestProblem extends Error {
  constructor(
    readonly status: 400 | 404,
    message: string,
    readonly parameter?: string,
  ) {
    super(message);
  }
}

// Each route's segments, compiled once: a literal to compare, or the name of a parameter.
const compiled = routes.map((route) => ({
  route,
  segments: route.path
    .split('/')
    .filter(Boolean)
    .map((segment) =>
      segment.startsWith('{') ? { param: segment.slice(1, -1), literal: null } : { param: null, literal: segment },
    ),
}));

const SEGMENT = new RegExp(PATH_SEGMENT_PATTERN, 'u');

/** Decodes one path segment exactly once and refuses anything that could name another path. */
function decodeSegment(raw: string): string {
  let value: string;
  try {
    value = decodeURIComponent(raw);
  } catch {
    throw new RequestProblem(400, `path segment "${raw}" is not valid percent-encoding`);
  }
  if (!SEGMENT.test(value)) {
    if ([...value].length > PATH_SEGMENT_MAX)
      throw new RequestProblem(400, `a path segment is longer than ${PATH_SEGMENT_MAX} characters`);
    throw new RequestProblem(
      400,
      `path segment "${raw}" contains a character or sequence that is not allowed in an identifier`,
    );
  }
  return value;
}

/** The route and path parameters for a pathname under API_PREFIX, or null when nothing matches. */
export function matchRoute(pathname: string): Match | null {
  if (pathname !== API_PREFIX && !pathname.startsWith(`${API_PREFIX}/`)) return null;
  let rest = pathname.slice(API_PREFIX.length);
  if (rest.length > 1 && rest.endsWith('/')) rest = rest.slice(0, -1); // one trailing slash is forgiven
  const rawSegments = rest.split('/').filter(Boolean);
  for (const { route, segments } of compiled) {
    if (segments.length !== rawSegments.length) continue;
    let ok = true;
    for (let i = 0; i < segments.length && ok; i++)
      ok = segments[i].literal === null || segments[i].literal === rawSegments[i];
    if (!ok) continue;
    const params: Record<string, string> = {};
    for (let i = 0; i < segments.length; i++)
      if (segments[i].param !== null) params[segments[i].param!] = rawSegments[i];
    for (const key of Object.keys(params)) params[key] = decodeSegment(params[key]);
    return { route, params };
  }
  return null;
}

/** The names of a route's query parameters, and how a refusal lists them: the same for every request. */
const queryParams = new Map<Route, { known: string[]; accepts: string }>();
function queryParamsOf(route: Route): { known: string[]; accepts: string } {
  let entry = queryParams.get(route);
  if (!entry) {
    const known = [...route.integerParams.map((p) => p.name), ...route.stringParams.map((p) => p.name)];
    entry = {
      known,
      accepts: known.length ? `this endpoint accepts: ${known.join(', ')}` : 'this endpoint takes no query parameters',
    };
    queryParams.set(route, entry);
  }
  return entry;
}

export interface QueryValues {
  integers: Record<string, number>;
  strings: Record<string, string>;
}

/** Validates the query string: only declared parameters, each at most once, integers within bounds. */
export function parseQuery(route: Route, search: URLSearchParams): QueryValues {
  const { known, accepts } = queryParamsOf(route);
  const seen = new Set<string>();
  for (const name of search.keys()) {
    if (!known.includes(name))
      throw new RequestProblem(400, `unknown query parameter "${clip(name, 50)}"; ${accepts}`, clip(name, 50));
    if (seen.has(name)) throw new RequestProblem(400, `query parameter "${name}" is given more than once`, name);
    seen.add(name);
  }
  const integers: Record<string, number> = {};
  for (const p of route.integerParams) {
    const raw = search.get(p.name);
    const bounds =
      p.maximum === undefined ? `an integer ≥ ${p.minimum}` : `an integer from ${p.minimum} to ${p.maximum}`;
    if (raw === null) {
      if (p.default !== undefined) integers[p.name] = p.default;
      continue;
    }
    if (/^\d{16,}$/.test(raw))
      throw new RequestProblem(400, `"${p.name}" must be ${bounds}; ${clip(raw, 30)}… is too large`, p.name);
    if (!/^-?\d{1,15}$/.test(raw))
      throw new RequestProblem(400, `"${p.name}" must be ${bounds}; got "${clip(raw, 30)}"`, p.name);
    const value = Number(raw);
    if (value < p.minimum)
      throw new RequestProblem(
        400,
        `"${p.name}" must be ${bounds}; ${value} is below the minimum of ${p.minimum}`,
        p.name,
      );
    if (p.maximum !== undefined && value > p.maximum) {
      throw new RequestProblem(
        400,
        `"${p.name}" must be ${bounds}; ${value} is above the maximum of ${p.maximum}`,
        p.name,
      );
    }
    integers[p.name] = value;
  }
  const strings: Record<string, string> = {};
  for (const p of route.stringParams) {
    const raw = search.get(p.name);
    if (raw === null) {
      if (p.required)
        throw new RequestProblem(
          400,
          `query parameter "${p.name}" is required (${p.minLength}–${p.maxLength} characters)`,
          p.name,
        );
      continue;
    }
    const length = [...raw].length;
    if (length < p.minLength || length > p.maxLength) {
      throw new RequestProblem(
        400,
        `"${p.name}" must be ${p.minLength}–${p.maxLength} characters long; got ${length}`,
        p.name,
      );
    }
    strings[p.name] = raw;
  }
  return { integers, strings };
}
