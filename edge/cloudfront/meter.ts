// The day meter: counts each API key's admitted requests per UTC day off the request path and has a
// key whose tier's day limit is reached marked as exhausted (until the next UTC midnight) in the
// KeyValueStore, where the key gate reads it. It reads the store but writes nothing to it: the mark
// writer (mark-writer.ts), a function of its own, writes the mark, so what reads untrusted log lines
// cannot write the secret, the release pin or a key's hash. Its input is the gate's own log lines
// (`isoatlas-meter key=<id> tier=<tier>`), delivered by a CloudWatch Logs subscription: CloudFront's
// standard logs record no request headers, so they cannot name the key.
//
// What AWS promises about that input, and what follows:
//   - CloudFront delivers edge function logs on a best-effort basis: a line may arrive long after its
//     request and, in rare cases, never. A lost line is a request never counted, so the quota is a
//     floor the meter enforces once it sees the requests, not an exact bill. CloudFront's standard
//     and real-time logs carry the same caveat, so no other log source would promise more.
//   - CloudWatch Logs invokes the function asynchronously; Lambda retries a failed invocation with
//     the same event and may, rarely, deliver an event twice anyway. Counting is idempotent per
//     delivery (meter-log.ts names it, meter-counts.ts stores one item per delivery), so a replay
//     counts nothing twice, and failing an invocation is always safe.
//   - The gate keeps admitting a key until its mark has propagated: the day quota is enforced after
//     the log delivery lag plus the store's propagation (minutes, not seconds).
// The store is read only when the running estimate reaches the tier's day limit (the tier comes
// with the line), and the writer asked once per key and day.
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { CloudFrontKeyValueStoreClient } from '@aws-sdk/client-cloudfront-keyvaluestore';
import { tierLimits, type AccessConfig } from '../access/config.js';
import { exactCount, raiseEstimate, recordDelivery, rememberMark } from './meter-counts.js';
import { parseDelivery, type DayCount, type LogsSubscriptionEvent } from './meter-log.js';
import { createMarker, type MarkOutcome, type WriteMarks } from './meter-mark.js';

export { countDelivery, parseDelivery, type LogsSubscriptionEvent } from './meter-log.js';
export { METER_TABLE_KEY, METER_TABLE_SORT_KEY, METER_TTL_ATTRIBUTE } from './meter-counts.js';

const DAY_MS = 86_400_000;
/** Counts outlive their day by this long, then DynamoDB deletes them (TTL). */
const KEEP_MS = 2 * DAY_MS;
/** The deployed meter's settings (environment variables the stack sets). */
export const METER_ENV = {
  table: 'ISOATLAS_METER_TABLE',
  kvsArn: 'ISOATLAS_KVS_ARN',
  config: 'ISOATLAS_ACCESS_CONFIG',
  /** The mark writer's function name. */
  markWriter: 'ISOATLAS_MARK_WRITER',
} as const;

export interface MeterOptions {
  dynamo: Pick<DynamoDBClient, 'send'>;
  table: string;
  kvs: Pick<CloudFrontKeyValueStoreClient, 'send'>;
  kvsArn: string;
  config: AccessConfig;
  /** Has the mark writer write exhaustion marks (meter-mark.ts). */
  writeMarks: WriteMarks;
  now?: () => number;
  log?: (line: string) => void;
}

export interface MeterResult {
  counted: number;
  exhausted: string[];
}

export function createMeter(o: MeterOptions) {
  const now = o.now ?? Date.now;
  const log = o.log ?? ((line: string) => console.log(line));
  const table = { dynamo: o.dynamo, table: o.table };
  const marker = createMarker(o);

  return async function onDelivery(event: LogsSubscriptionEvent): Promise<MeterResult> {
    const result: MeterResult = { counted: 0, exhausted: [] };
    const today = new Date(now()).toISOString().slice(0, 10);
    const delivery = parseDelivery(event);
    const failures: unknown[] = [];
    for (const [counter, c] of delivery.counts) {
      const dayStart = Date.parse(`${c.day}T00:00:00Z`);
      const expiresAt = Math.floor((dayStart + KEEP_MS) / 1000);
      await recordDelivery(table, counter, delivery.id, c.hits, expiresAt);
      const estimate = await raiseEstimate(table, counter, c.hits, c.tier, expiresAt);
      result.counted += c.hits;
      // Lines of an ended day (logs can arrive hours late) are counted but mark nothing.
      if (c.day !== today) continue;
      const until = Math.floor((dayStart + DAY_MS) / 1000);
      if (estimate.markedUntil >= until) continue;
      try {
        const outcome = await markIfReached(counter, c, estimate.hits, estimate.tier, until);
        if (outcome.marked) {
          result.exhausted.push(c.id);
          log(
            `isoatlas meter: key ${c.id} used its day quota (${outcome.total} requests on ${c.day}); refused until ${new Date(until * 1000).toISOString()}`,
          );
        }
      } catch (err) {
        failures.push(err); // the other keys of the delivery still count and mark
      }
    }
    // A failed invocation is retried by Lambda with the same delivery, which counts nothing twice.
    if (failures.length)
      throw new AggregateError(
        failures,
        `isoatlas meter: ${failures.length} mark(s) not written; the delivery will be retried`,
      );
    return result;
  };

  /** Checks the exact count, then the store, only once the estimate reached the tier's day limit. */
  async function markIfReached(
    counter: string,
    c: DayCount,
    estimate: number,
    knownTier: string | undefined,
    until: number,
  ): Promise<MarkOutcome & { total: number }> {
    // Lines of an older gate name no tier: the store's record says it.
    const tier = c.tier ?? knownTier ?? (await marker.tierOf(c.id));
    const limit = tier === undefined ? undefined : tierLimits(o.config, tier).per_day;
    if (limit === undefined || estimate < limit) return { marked: false, settled: false, total: 0 };
    const total = await exactCount(table, counter);
    if (total < limit) return { marked: false, settled: false, total };
    const outcome = await marker.mark(c.id, total, until);
    if (outcome.settled) await rememberMark(table, counter, until);
    return { ...outcome, total };
  }
}
