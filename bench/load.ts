// One load run with autocannon (programmatic API, in this process): the same generator, connections
// and duration against every server, so their figures compare.
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
}

export async function load(opts: LoadOptions): Promise<LoadResult> {
  const result = await autocannon({
    url: opts.base,
    connections: opts.connections,
    duration: opts.seconds,
    overallRate: opts.rate,
    timeout: 10,
    // Each connection walks through the paths in turn.
    requests: opts.paths.map((path) => ({ method: 'GET', path })),
  });
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
