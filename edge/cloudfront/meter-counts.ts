// The day meter's counts in DynamoDB. One partition per (key id, UTC day); in it, one item per
// delivery holding that delivery's requests for the key (a plain put, so a replayed delivery writes
// the same item again and counts once), and a running estimate. The exact count is the sum of the
// delivery items, read only once the estimate reaches a limit. A delivery writes its item first and
// raises the estimate second: an estimate that reached the limit then counts only deliveries whose
// items are already written, so the exact sum read after it sees them all, whatever runs
// concurrently. A replay raises the estimate again (an over-estimate costs one more exact read); an
// invocation that stops between the two writes and is never retried leaves the estimate short of
// that delivery, which delays the check by as many requests, as a lost log line would. No
// transactions: each write is idempotent or only ever over-counts the estimate.
import {
  PutItemCommand,
  QueryCommand,
  UpdateItemCommand,
  type DynamoDBClient,
  type QueryCommandOutput,
} from '@aws-sdk/client-dynamodb';

/** Partition key: `<key id>:<day>`. */
export const METER_TABLE_KEY = 'counter';
/** Sort key: ESTIMATE, or DELIVERY_PREFIX and a delivery's id. */
export const METER_TABLE_SORT_KEY = 'entry';
export const METER_TTL_ATTRIBUTE = 'expires_at';
const ESTIMATE = 'estimate';
const DELIVERY_PREFIX = 'delivery:';

export interface MeterTable {
  dynamo: Pick<DynamoDBClient, 'send'>;
  table: string;
}

export interface Estimate {
  /** Counts every delivery whose item is written and whose estimate was raised; replays twice. */
  hits: number;
  /** The key's tier, as a line of the day named it. */
  tier?: string;
  /** The exhaustion mark this day's count already led to (seconds since the epoch; 0: none). */
  markedUntil: number;
}

/** Adds a delivery's requests to the estimate, after its item is written. */
export async function raiseEstimate(
  t: MeterTable,
  counter: string,
  hits: number,
  tier: string | undefined,
  expiresAt: number,
): Promise<Estimate> {
  const out = await t.dynamo.send(
    new UpdateItemCommand({
      TableName: t.table,
      Key: { [METER_TABLE_KEY]: { S: counter }, [METER_TABLE_SORT_KEY]: { S: ESTIMATE } },
      UpdateExpression: `ADD #hits :n SET #ttl = :ttl${tier ? ', #tier = :tier' : ''}`,
      ExpressionAttributeNames: { '#hits': 'hits', '#ttl': METER_TTL_ATTRIBUTE, ...(tier ? { '#tier': 'tier' } : {}) },
      ExpressionAttributeValues: {
        ':n': { N: String(hits) },
        ':ttl': { N: String(expiresAt) },
        ...(tier ? { ':tier': { S: tier } } : {}),
      },
      ReturnValues: 'ALL_NEW',
    }),
  );
  const item = out.Attributes ?? {};
  return { hits: Number(item.hits?.N ?? 0), tier: item.tier?.S, markedUntil: Number(item.marked_until?.N ?? 0) };
}

/** Writes a delivery's requests for one key and day (before raising the estimate); the same
 * delivery writes the same item. */
export async function recordDelivery(
  t: MeterTable,
  counter: string,
  deliveryId: string,
  hits: number,
  expiresAt: number,
): Promise<void> {
  await t.dynamo.send(
    new PutItemCommand({
      TableName: t.table,
      Item: {
        [METER_TABLE_KEY]: { S: counter },
        [METER_TABLE_SORT_KEY]: { S: `${DELIVERY_PREFIX}${deliveryId}` },
        hits: { N: String(hits) },
        [METER_TTL_ATTRIBUTE]: { N: String(expiresAt) },
      },
    }),
  );
}

/** The exact count: the sum over the partition's delivery items (strongly consistent, every page). */
export async function exactCount(t: MeterTable, counter: string): Promise<number> {
  let total = 0;
  let start: QueryCommandOutput['LastEvaluatedKey'];
  do {
    const page: QueryCommandOutput = await t.dynamo.send(
      new QueryCommand({
        TableName: t.table,
        KeyConditionExpression: '#key = :key AND begins_with(#entry, :prefix)',
        ExpressionAttributeNames: { '#key': METER_TABLE_KEY, '#entry': METER_TABLE_SORT_KEY, '#hits': 'hits' },
        ExpressionAttributeValues: { ':key': { S: counter }, ':prefix': { S: DELIVERY_PREFIX } },
        ProjectionExpression: '#hits',
        ConsistentRead: true,
        ExclusiveStartKey: start,
      }),
    );
    for (const item of page.Items ?? []) total += Number(item.hits?.N ?? 0);
    start = page.LastEvaluatedKey;
  } while (start);
  return total;
}

/** Remembers that the key carries its mark for this day, so later deliveries leave the store alone. */
export async function rememberMark(t: MeterTable, counter: string, until: number): Promise<void> {
  await t.dynamo.send(
    new UpdateItemCommand({
      TableName: t.table,
      Key: { [METER_TABLE_KEY]: { S: counter }, [METER_TABLE_SORT_KEY]: { S: ESTIMATE } },
      UpdateExpression: 'SET #marked = :until',
      ExpressionAttributeNames: { '#marked': 'marked_until' },
      ExpressionAttributeValues: { ':until': { N: String(until) } },
    }),
  );
}
