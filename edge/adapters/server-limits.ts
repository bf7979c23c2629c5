// The bounds on what clients can hold on the local server (`isoatlas serve`), with their defaults
// and the environment variables that change them. SECURITY.md lists them for operators. The bounds on
// header fields (their number and bytes: 431) are the CDN's, fixed, in edge/contract/header-limits.ts.

/** Size of the request line plus headers (beyond it: 431); time to send the headers and the whole
 * request (beyond it: 408, connection closed); how long an idle keep-alive connection stays open; how
 * many requests one connection may carry; how many connections are open at once, in all and from one
 * client (client-key.ts: an IPv6 client is its network; a trusted front is not capped here, it caps
 * its own clients); and what answers not yet taken by their clients may hold, per connection
 * (requests and bytes) and in total (every answer is charged, the first on a connection too); and how
 * long a client may take nothing of an answer being sent before its connection is closed (as nginx's
 * send_timeout: between two successive writes, not for the whole answer). A connection over its share
 * is closed: its client asks without reading. */
export const SERVER_LIMITS = {
  maxHeaderSize: 16 * 1024,
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 30_000,
  keepAliveTimeoutMs: 5_000,
  maxRequestsPerSocket: 1_000,
  maxConnections: 1_024,
  maxConnectionsPerAddress: 64,
  maxPendingPerConnection: 32,
  maxUnsentBytesPerConnection: 4 * 1024 * 1024,
  maxUnsentBytes: 256 * 1024 * 1024,
  sendTimeoutMs: 30_000,
};
export type ServerLimits = typeof SERVER_LIMITS;

/** Environment variables that override SERVER_LIMITS (`isoatlas serve`; tests use short timeouts). */
export const SERVER_LIMIT_ENV: Record<keyof ServerLimits, string> = {
  maxHeaderSize: 'ISOATLAS_MAX_HEADER_BYTES',
  headersTimeoutMs: 'ISOATLAS_HEADERS_TIMEOUT_MS',
  requestTimeoutMs: 'ISOATLAS_REQUEST_TIMEOUT_MS',
  keepAliveTimeoutMs: 'ISOATLAS_KEEP_ALIVE_TIMEOUT_MS',
  maxRequestsPerSocket: 'ISOATLAS_MAX_REQUESTS_PER_SOCKET',
  maxConnections: 'ISOATLAS_MAX_CONNECTIONS',
  maxConnectionsPerAddress: 'ISOATLAS_MAX_CONNECTIONS_PER_ADDRESS',
  maxPendingPerConnection: 'ISOATLAS_MAX_PENDING_PER_CONNECTION',
  maxUnsentBytesPerConnection: 'ISOATLAS_MAX_UNSENT_BYTES_PER_CONNECTION',
  maxUnsentBytes: 'ISOATLAS_MAX_UNSENT_BYTES',
  sendTimeoutMs: 'ISOATLAS_SEND_TIMEOUT_MS',
};

/** SERVER_LIMITS with the environment's overrides; throws on a value that is not a positive integer. */
export function serverLimits(
  env: Record<string, string | undefined> = process.env,
  overrides: Partial<ServerLimits> = {},
): ServerLimits {
  const limits = { ...SERVER_LIMITS };
  for (const [field, name] of Object.entries(SERVER_LIMIT_ENV) as [keyof ServerLimits, string][]) {
    const raw = env[name];
    if (raw === undefined || raw === '') continue;
    if (!/^[1-9]\d{0,9}$/.test(raw)) throw new Error(`${name} must be a positive integer; got "${raw.slice(0, 30)}"`);
    limits[field] = Number(raw);
  }
  Object.assign(limits, overrides);
  // Node refuses a headers timeout longer than the request timeout.
  if (limits.headersTimeoutMs > limits.requestTimeoutMs)
    throw new Error(
      `the headers timeout (${limits.headersTimeoutMs} ms) cannot exceed the request timeout (${limits.requestTimeoutMs} ms)`,
    );
  return limits;
}

/** The answer to a client over its share of connections, from the server or from the nginx front
 * (which counts requests in progress, not idle connections). An idle connection is closed within the
 * keep-alive timeout: by then the client has room again. */
export function connectionShareProblem(limits: ServerLimits): {
  status: number;
  detail: string;
  headers: Record<string, string>;
} {
  return {
    status: 429,
    detail: `too many connections from one address: at most ${limits.maxConnectionsPerAddress} at once; retry when some have closed`,
    headers: { 'Retry-After': String(Math.ceil(limits.keepAliveTimeoutMs / 1000)) },
  };
}
