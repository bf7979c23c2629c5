// Runs a CloudFront Function's source as CloudFront would, as far as a test can: the documented
// `cloudfront` module (cf.kvs() over a map of the store's entries, whose get() rejects a missing key)
// and the `crypto` module, in a fresh V8 context with nothing else from Node. It refuses source that
// uses what runtime cloudfront-js-2.0 does not offer (or warns against), so a change that would
// only fail at deploy time fails here.
import { createHmac, createHash } from 'node:crypto';
import { Script, createContext } from 'node:vm';

/** What the gate must not use: features outside the runtime's list, and the Promise combinators the
 * KeyValueStore documentation warns use too much memory. Checked on the code without comments. */
const UNSUPPORTED: [RegExp, string][] = [
  [/\brequire\s*\(/, 'require() (the runtime has import for its own modules only)'],
  [/\bimport\s*\(/, 'dynamic import'],
  [/\bexport\b/, 'exports (the runtime calls a top-level function named handler)'],
  [/\beval\s*\(|\bnew\s+Function\b/, 'eval'],
  [/\b(setTimeout|setInterval|setImmediate|queueMicrotask)\b/, 'timers'],
  [/\b(fetch|XMLHttpRequest|WebSocket)\b/, 'network access'],
  [/\bprocess\./, 'process'],
  [/\bclass\s+\w/, 'classes'],
  [/\?\.|\?\?/, 'optional chaining / nullish coalescing'],
  [/\.\.\./, 'spread and rest syntax'],
  [/\bPromise\.(all|any|race|allSettled)\b|\.then\s*\(|\.catch\s*\(/, 'Promise combinators and chains'],
];
const ALLOWED_IMPORTS = new Map([
  ['cloudfront', 'cf'],
  ['crypto', 'crypto'],
]);

export function withoutComments(source: string): string {
  return source.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:\\])\/\/.*$/gm, '$1');
}

/** Problems that would keep `source` from running on cloudfront-js-2.0 (none: an empty list). */
export function runtimeProblems(source: string): string[] {
  const code = withoutComments(source);
  const problems = UNSUPPORTED.filter(([pattern]) => pattern.test(code)).map(([, what]) => `uses ${what}`);
  for (const m of code.matchAll(/^\s*import\s+(\w+)\s+from\s+'([^']+)';?\s*$/gm)) {
    if (ALLOWED_IMPORTS.get(m[2]) !== m[1])
      problems.push(`imports ${m[2]} as ${m[1]} (only cf from 'cloudfront' and crypto from 'crypto')`);
  }
  if (!/^async function handler\(event\)/m.test(code) && !/^function handler\(event\)/m.test(code))
    problems.push('has no top-level handler(event)');
  return problems;
}

export interface LoadedFunction {
  handler(event: ViewerRequestEvent): Promise<any>;
  /** What the function passed to console.log, in order. */
  logs: string[];
  /** How many HMACs it computed. */
  hmacs(): number;
}

export interface ViewerRequestEvent {
  version: '1.0';
  context: { eventType: 'viewer-request'; distributionId: string; requestId: string };
  viewer: { ip: string };
  request: {
    method: string;
    uri: string;
    querystring: Record<string, unknown>;
    headers: Record<string, { value: string; multiValue?: { value: string }[] }>;
    cookies: Record<string, unknown>;
  };
}

/** Loads the function against a store (the entries `keys publish` writes) and a clock. */
export function loadCloudFrontFunction(
  source: string,
  store: Map<string, string>,
  now: () => number = Date.now,
): LoadedFunction {
  const problems = runtimeProblems(source);
  if (problems.length) throw new Error(`not runnable on cloudfront-js-2.0: ${problems.join('; ')}`);
  const logs: string[] = [];
  const kvs = {
    async get(key: string, options?: { format?: 'string' | 'json' | 'bytes' }) {
      const value = store.get(key);
      if (value === undefined) throw new Error(`the key ${key} does not exist`);
      if (options?.format === 'json') return JSON.parse(value);
      if (options?.format === 'bytes') return Buffer.from(value);
      return value;
    },
    async exists(key: string) {
      return store.has(key);
    },
  };
  const cf = { kvs: () => kvs };
  let hmacs = 0;
  const crypto = {
    createHmac: (algorithm: string, key: Buffer | string) => {
      hmacs++;
      return createHmac(algorithm, key);
    },
    createHash,
  };
  class ClockDate extends Date {
    static now() {
      return now();
    }
  }
  const body = source.replace(/^\s*import\s+\w+\s+from\s+'[^']+';?\s*$/gm, '');
  const context = createContext({
    cf,
    crypto,
    Buffer,
    Date: ClockDate,
    console: { log: (...args: unknown[]) => logs.push(args.join(' ')) },
  });
  const handler = new Script(`${body}\n;handler`, { filename: 'cloudfront-function.js' }).runInContext(
    context,
  ) as LoadedFunction['handler'];
  return { handler: (event) => handler(structuredClone(event)), logs, hmacs: () => hmacs };
}

export function viewerRequest(init: {
  method?: string;
  uri?: string;
  authorization?: string | string[];
  ip?: string;
  querystring?: Record<string, { value: string }>;
  headers?: Record<string, string>;
}): ViewerRequestEvent {
  const headers: ViewerRequestEvent['request']['headers'] = { host: { value: 'd111111abcdef8.cloudfront.net' } };
  // Lowercase names, as CloudFront passes them to a function.
  for (const [name, value] of Object.entries(init.headers ?? {})) headers[name.toLowerCase()] = { value };
  const auth = init.authorization;
  if (typeof auth === 'string') headers.authorization = { value: auth };
  else if (auth) headers.authorization = { value: auth[0], multiValue: auth.map((value) => ({ value })) };
  return {
    version: '1.0',
    context: { eventType: 'viewer-request', distributionId: 'EDFDVBD6EXAMPLE', requestId: 'test' },
    viewer: { ip: init.ip ?? '198.51.100.7' },
    request: {
      method: init.method ?? 'GET',
      uri: init.uri ?? '/api/v1/genes/ENSG00000100300',
      querystring: init.querystring ?? {},
      headers,
      cookies: {},
    },
  };
}
