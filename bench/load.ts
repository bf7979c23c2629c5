// One load run with autocannon (programmatic API, in this process; paths in turn, a steady rate):
// the same generator, connections and duration against every server of a comparison.
import autocannon from 'autocannon';

export interface LoadResult {
  requests: number;
  seconds: number;
  rps: number;
  p50Ms: number;
  p99Ms: number;
  /** Connection errors and timeouts. */
  socketErrors: number;
  status: Record<string, number>;
}

export interface LoadOptions {
  base: string;
  paths: string[];
  connections: number;
  seconds: number;
  /** Steady overall rate (requests/s); unset = as fast as the server answers. */
  rate?: number;
  /** Each connection is closed and opened again after this many requests. */
  reconnectEvery?: number;
  /** Request headers (e.g. Accept-Encoding). */
  headers?: Record<string, string>;
}

export async function load(opts: LoadOptions): Promise<LoadResult> {
  // reconnectRate (autocannon's -D/--reconnectRate) is missing from its type definitions.
  const options: Parameters<typeof autocannon>[0] & { reconnectRate?: number } = {
    url: opts.base,
    connections: opts.connections,
    duration: opts.seconds,
    overallRate: opts.rate,
    reconnectRate: opts.reconnectEvery,
    timeout: 10,
    // Each connection walks through the paths in turn.
    requests: opts.paths.map((path) => ({ method: 'GET', path, headers: opts.headers })),
  };
  const result = await autocannon(options);
  const status: Record<string, number> = {};
  for (const [code, { count }] of Object.entries(result.statusCodeStats ?? {})) status[code] = Number(count);
  return {
    requests: result.requests.total,
    seconds: result.duration,
    rps: result.requests.total / result.duration,
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    socketErrors: result.errors + result.timeouts,
    status,
  };
}
