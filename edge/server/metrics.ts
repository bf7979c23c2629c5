// Prometheus metrics of `isoatlas serve --metrics` (text exposition format 0.0.4): requests by route
// and status, a latency histogram, and the verified-file caches' hits and misses. A request's route
// label is what answered it, an entry of the dispatch table (edge/contract/dispatch.ts) or `other`,
// as the handler or the server's system paths named it: a bounded set, never read from the path.
import { LoadingCache } from '../loading-cache.js';
import type { AnswerLabel } from '../contract/dispatch.js';

/** Upper bounds (seconds) of the latency histogram's buckets. */
const BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];

export class ServerMetrics {
  private readonly requests = new Map<string, number>();
  private readonly buckets = BUCKETS.map(() => 0);
  private sum = 0;
  private count = 0;

  /** `route`: what answered the request (RequestContext.answeredBy). */
  observe(route: AnswerLabel, status: number | string, seconds: number): void {
    const key = `${route}\u0000${typeof status === 'number' ? status : 'none'}`;
    this.requests.set(key, (this.requests.get(key) ?? 0) + 1);
    BUCKETS.forEach((le, i) => {
      if (seconds <= le) this.buckets[i]++;
    });
    this.sum += seconds;
    this.count++;
  }

  render(): string {
    const out = [
      '# HELP isoatlas_requests_total Requests answered, by route and status.',
      '# TYPE isoatlas_requests_total counter',
      ...[...this.requests].sort().map(([key, n]) => {
        const [route, status] = key.split('\u0000');
        return `isoatlas_requests_total{route="${route}",status="${status}"} ${n}`;
      }),
      '# HELP isoatlas_request_duration_seconds Time from request to answer.',
      '# TYPE isoatlas_request_duration_seconds histogram',
      ...BUCKETS.map((le, i) => `isoatlas_request_duration_seconds_bucket{le="${le}"} ${this.buckets[i]}`),
      `isoatlas_request_duration_seconds_bucket{le="+Inf"} ${this.count}`,
      `isoatlas_request_duration_seconds_sum ${this.sum}`,
      `isoatlas_request_duration_seconds_count ${this.count}`,
      '# HELP isoatlas_cache_hits_total Verified files and manifest shards found in memory.',
      '# TYPE isoatlas_cache_hits_total counter',
      `isoatlas_cache_hits_total ${LoadingCache.totals.hits}`,
      '# HELP isoatlas_cache_misses_total Verified files and manifest shards read from the tree.',
      '# TYPE isoatlas_cache_misses_total counter',
      `isoatlas_cache_misses_total ${LoadingCache.totals.misses}`,
    ];
    return `${out.join('\n')}\n`;
  }
}
