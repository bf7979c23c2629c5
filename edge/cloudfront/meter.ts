// The day meter: counts each API key's admitted requests per UTC day off the request path and marks a
// key whose tier's day limit is reached as exhausted (until the next UTC midnight) in the
// KeyValueStore, where the key gate reads it. Its input is the gate's own log lines, delivered by a
// CloudWatch Logs subscription: CloudFront's standard logs record no request headers, so they cannot
// name the key. Counting is per (key id, day) in DynamoDB, with an atomic ADD, so concurrent
// deliveries add up. The gate keeps admitting a key until its mark has propagated: the day quota is
// approximate by the delivery lag of the logs plus the store's propagation (minutes, not seconds).
import { gunzipSync } from 'node:zlib';
import { UpdateItemCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import {
  ConflictException,
  DescribeKeyValueStoreCommand,
  GetKeyCommand,
  PutKeyCommand,
  ResourceNotFoundException,
  type CloudFrontKeyValueStoreClient,
} from '@aws-sdk/client-cloudfront-keyvaluestore';
import { tierLimits, type AccessConfig } from '../access/config.js';
import { decodeKeyRecord, encodeKeyRecord, keyEntry, METER_MARK } from './kvs-layout.js';

const DAY_MS = 86_400_000;
const ID = /^[a-z2-7]{8,9}$/;
/** Counters outlive their day by this long, then DynamoDB deletes them (TTL). */
const KEEP_MS = 2 * DAY_MS;
export const METER_TABLE_KEY = 'counter';
export const METER_TTL_ATTRIBUTE = 'expires_at';
/** The deployed meter's settings (environment variables the stack sets). */
export const METER_ENV = { table: 'ISOATLAS_METER_TABLE', kvsArn: 'ISOATLAS_KVS_ARN', config: 'ISOATLAS_ACCESS_CONFIG' } as const;

/** A CloudWatch Logs subscription delivery, as Lambda receives it. */
export interface LogsSubscriptionEvent {
  awslogs: { data: string };
}

interface LogsPayload {
  messageType: 'DATA_MESSAGE' | 'CONTROL_MESSAGE';
  logEvents?: { id: string; timestamp: number; message: string }[];
}

/** Requests per (key id, UTC day) in one delivery. Lines without the gate's mark are ignored. */
export function countDelivery(event: LogsSubscriptionEvent): Map<string, { id: string; day: string; hits: number }> {
  const payload = JSON.parse(gunzipSync(Buffer.from(event.awslogs.data, 'base64')).toString('utf8')) as LogsPayload;
  const counts = new Map<string, { id: string; day: string; hits: number }>();
  if (payload.messageType !== 'DATA_MESSAGE') return counts;
  for (const e of payload.logEvents ?? []) {
    const at = e.message.indexOf(METER_MARK);
    if (at < 0) continue;
    const id = e.message.slice(at + METER_MARK.length).trim().split(/\s/)[0];
    if (!ID.test(id)) continue;
    const day = new Date(e.timestamp).toISOString().slice(0, 10);
    const counter = `${id}:${day}`;
    const c = counts.get(counter) ?? { id, day, hits: 0 };
    c.hits++;
    counts.set(counter, c);
  }
  return counts;
}

export interface MeterOptions {
  dynamo: DynamoDBClient;
  table: string;
  kvs: CloudFrontKeyValueStoreClient;
  kvsArn: string;
  config: AccessConfig;
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
  return async function onDelivery(event: LogsSubscriptionEvent): Promise<MeterResult> {
    const result: MeterResult = { counted: 0, exhausted: [] };
    const today = new Date(now()).toISOString().slice(0, 10);
    for (const [counter, c] of countDelivery(event)) {
      const dayStart = Date.parse(`${c.day}T00:00:00Z`);
      const out = await o.dynamo.send(
        new UpdateItemCommand({
          TableName: o.table,
          Key: { [METER_TABLE_KEY]: { S: counter } },
          UpdateExpression: 'ADD hits :n SET #ttl = :ttl',
          ExpressionAttributeNames: { '#ttl': METER_TTL_ATTRIBUTE },
          ExpressionAttributeValues: { ':n': { N: String(c.hits) }, ':ttl': { N: String(Math.floor((dayStart + KEEP_MS) / 1000)) } },
          ReturnValues: 'UPDATED_NEW',
        }),
      );
      result.counted += c.hits;
      // Lines of an ended day (logs can arrive hours late) are counted but mark nothing.
      if (c.day !== today) continue;
      const total = Number(out.Attributes?.hits?.N ?? 0);
      const until = Math.floor((dayStart + DAY_MS) / 1000);
      if (await markIfOver(c.id, total, until)) {
        result.exhausted.push(c.id);
        log(`isoatlas meter: key ${c.id} used its day quota (${total} requests on ${c.day}); refused until ${new Date(until * 1000).toISOString()}`);
      }
    }
    return result;
  };

  /** Sets the key's exhaustion mark when `total` reached its tier's day limit. True when it wrote it. */
  async function markIfOver(id: string, total: number, until: number): Promise<boolean> {
    for (let attempt = 1; ; attempt++) {
      const { ETag } = await o.kvs.send(new DescribeKeyValueStoreCommand({ KvsARN: o.kvsArn }));
      let value: string | undefined;
      try {
        value = (await o.kvs.send(new GetKeyCommand({ KvsARN: o.kvsArn, Key: keyEntry(id) }))).Value;
      } catch (err) {
        if (err instanceof ResourceNotFoundException) return false; // not a published key
        throw err;
      }
      const record = value === undefined ? null : decodeKeyRecord(value);
      const limit = record ? tierLimits(o.config, record.tier).per_day : undefined;
      if (!record || limit === undefined || total < limit || record.exhausted_until >= until) return false;
      try {
        await o.kvs.send(new PutKeyCommand({ KvsARN: o.kvsArn, Key: keyEntry(id), Value: encodeKeyRecord({ ...record, exhausted_until: until }), IfMatch: ETag }));
        return true;
      } catch (err) {
        if (!(err instanceof ConflictException) || attempt >= 5) throw err;
      }
    }
  }
}
