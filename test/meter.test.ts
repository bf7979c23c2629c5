// The day meter (edge/cloudfront/meter.ts) on deliveries of the shape CloudWatch Logs sends a
// subscribed Lambda function (base64 of gzipped JSON with logEvents), carrying the key gate's own
// log lines; counting in DynamoDB (dynalite, started here) and marking keys in a KeyValueStore
// stand-in, which the key gate then reads. Lambda's replays of a delivery are the same event run
// again; a failure between the meter's writes is a client that fails one write. The enforcement lag
// itself (log delivery plus store propagation, minutes) is AWS's and is documented, not simulated.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import dynalite from 'dynalite';
import type { AddressInfo } from 'node:net';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import {
  CreateTableCommand,
  DynamoDBClient,
  type GetItemCommand,
  PutItemCommand,
  QueryCommand,
  type QueryCommandOutput,
} from '@aws-sdk/client-dynamodb';
import {
  type CloudFrontKeyValueStoreClient,
  DeleteKeyCommand,
  PutKeyCommand,
  UpdateKeysCommand,
} from '@aws-sdk/client-cloudfront-keyvaluestore';
import { resolveAccessConfig } from '../edge/access/config.js';
import { keyGateCode, keyGateSettings } from '../edge/cloudfront/key-gate.js';
import { decodeKeyRecord, keyEntry, kvsEntries, METER_MARK, meterLine } from '../edge/cloudfront/kvs-layout.js';
import {
  countDelivery,
  createMeter,
  METER_TABLE_KEY,
  METER_TABLE_SORT_KEY,
  parseDelivery,
  type LogsSubscriptionEvent,
} from '../edge/cloudfront/meter.js';
import { issueKey, loadRegistry, readSecret } from '../build/keys/registry.js';
import { kvsClient } from '../build/keys/commands.js';
import { publishToStore } from '../build/keys/kvs.js';
import { startFakeKvs, type FakeKvs } from './helpers/fake-kvs.js';
import { startFakeLambda, TEST_CREDENTIALS, type FakeLambda } from './helpers/fake-lambda.js';
import { loadCloudFrontFunction, viewerRequest } from './helpers/cloudfront-function.js';
import { createMarkWriter } from '../edge/cloudfront/mark-writer.js';
import { invokeMarkWriter } from '../edge/cloudfront/meter-mark.js';

const ARN = 'arn:aws:cloudfront::111111111111:key-value-store/6a1f3c2e-0b4d-4e8f-a9c7-5d2e1f0a3b4c';
const NOW = Date.parse('2026-11-25T15:30:00Z');
const TODAY = '2026-11-25';
const YESTERDAY = Date.parse('2026-11-24T12:00:00Z');
const MIDNIGHT = Date.parse('2026-11-26T00:00:00Z') / 1000;
const CONFIG = resolveAccessConfig(
  {
    key_required: {
      per_ip: { per_minute: 1200 },
      tiers: { standard: { per_minute: 60, per_day: 5 }, plus: { per_minute: 600, per_day: 100000 } },
    },
  },
  'key-required',
);

let nextEventId = 1;
/** A CloudWatch Logs subscription delivery of these messages; its events' ids are new. */
function delivery(
  messages: { at: number; message: string }[],
  o: { messageType?: string; logStream?: string; ids?: string[] } = {},
): LogsSubscriptionEvent {
  const payload = {
    messageType: o.messageType ?? 'DATA_MESSAGE',
    owner: '111111111111',
    logGroup: '/aws/cloudfront/function/IsoatlasCdn-key-gate',
    logStream: o.logStream ?? '2026/11/25/[$LATEST]0123456789abcdef',
    subscriptionFilters: ['IsoatlasCdn-MeterSubscription'],
    logEvents: messages.map((m, i) => ({
      id: o.ids?.[i] ?? String(nextEventId++).padStart(56, '3'),
      timestamp: m.at,
      message: m.message,
    })),
  };
  return { awslogs: { data: gzipSync(JSON.stringify(payload)).toString('base64') } };
}
interface Key {
  key: string;
  id: string;
  tier: string;
}
/** The gate's line for a request with this key. */
const line = (k: Pick<Key, 'id' | 'tier'>, at = NOW) => ({ at, message: meterLine(k.id, k.tier) });
/** An older gate's line, which names no tier. */
const untiered = (id: string, at = NOW) => ({ at, message: `${METER_MARK}${id}` });
const lines = (k: Key, n: number, at = NOW) => Array.from({ length: n }, () => line(k, at));

let db: ReturnType<typeof dynalite>;
let dynamo: DynamoDBClient;
let kvs: FakeKvs;
let lambda: FakeLambda;
let keysDir: string;
/** The mark writer's function name, as the meter is given it. */
const MARK_WRITER = 'Test-ExhaustionMarkWriter';
let standard: Key;
let plus: Key;
const env = { id: process.env.AWS_ACCESS_KEY_ID, secret: process.env.AWS_SECRET_ACCESS_KEY };

/** A key issued and published now, so each test counts from zero. */
async function freshKey(tier: string): Promise<Key> {
  const { key, record } = await issueKey(keysDir, { name: 'M', affiliation: 'M', use: 'meter tests', tier });
  await publishToStore(
    await kvsClient(kvs.url),
    ARN,
    kvsEntries(loadRegistry(keysDir).keys, readSecret(keysDir, { create: false })!),
  );
  return { key, id: record.id, tier };
}

beforeAll(async () => {
  process.env.AWS_ACCESS_KEY_ID = 'AKIDEXAMPLE';
  process.env.AWS_SECRET_ACCESS_KEY = 'test';
  db = dynalite({ createTableMs: 0 });
  await new Promise<void>((ok) => db.listen(0, '127.0.0.1', () => ok()));
  dynamo = new DynamoDBClient({
    endpoint: `http://127.0.0.1:${(db.address() as AddressInfo).port}`,
    region: 'us-east-1',
  });
  await dynamo.send(
    new CreateTableCommand({
      TableName: 'meter',
      AttributeDefinitions: [
        { AttributeName: METER_TABLE_KEY, AttributeType: 'S' },
        { AttributeName: METER_TABLE_SORT_KEY, AttributeType: 'S' },
      ],
      KeySchema: [
        { AttributeName: METER_TABLE_KEY, KeyType: 'HASH' },
        { AttributeName: METER_TABLE_SORT_KEY, KeyType: 'RANGE' },
      ],
      BillingMode: 'PAY_PER_REQUEST',
    }),
  );
  kvs = await startFakeKvs(ARN);
  // The mark writer as Lambda runs it: the meter invokes it over Lambda's API, signed.
  const writeMarks = createMarkWriter({
    kvs: await kvsClient(kvs.url),
    kvsArn: ARN,
    now: () => NOW,
    log: () => {},
    emit: () => {},
    sleep: async () => {},
  });
  lambda = await startFakeLambda({ [MARK_WRITER]: writeMarks });
  keysDir = mkdtempSync(join(tmpdir(), 'isoatlas-meter-'));
  standard = await freshKey('standard');
  plus = await freshKey('plus');
});

afterAll(async () => {
  await kvs.close();
  await lambda.close();
  await new Promise((ok) => db.close(ok));
  process.env.AWS_ACCESS_KEY_ID = env.id;
  process.env.AWS_SECRET_ACCESS_KEY = env.secret;
});

/** The store as the meter's role has it: reads only (a write is refused, as IAM would). */
async function readOnlyKvs(): Promise<CloudFrontKeyValueStoreClient> {
  const client = await kvsClient(kvs.url);
  const writes = [PutKeyCommand, UpdateKeysCommand, DeleteKeyCommand];
  return {
    send: (command: object) =>
      writes.some((w) => command instanceof w)
        ? Promise.reject(new Error(`AccessDenied: the meter may not ${command.constructor.name}`))
        : client.send(command as never),
  } as unknown as CloudFrontKeyValueStoreClient;
}

async function meter(o: { now?: number; dynamo?: DynamoDBClient } = {}) {
  const logged: string[] = [];
  const run = createMeter({
    dynamo: o.dynamo ?? dynamo,
    table: 'meter',
    kvs: await readOnlyKvs(),
    kvsArn: ARN,
    config: CONFIG,
    writeMarks: invokeMarkWriter({
      functionName: MARK_WRITER,
      region: 'us-east-1',
      credentials: async () => TEST_CREDENTIALS,
      endpoint: lambda.url,
    }),
    now: () => o.now ?? NOW,
    log: (l) => logged.push(l),
  });
  return { run, logged };
}

/** The day's requests as the table holds them: every item of the key's partition but the estimate. */
async function stored(id: string, day = TODAY): Promise<{ total: number; estimate: number }> {
  let total = 0;
  let estimate = 0;
  let start: QueryCommandOutput['LastEvaluatedKey'];
  do {
    const page: QueryCommandOutput = await dynamo.send(
      new QueryCommand({
        TableName: 'meter',
        KeyConditionExpression: '#k = :k',
        ExpressionAttributeNames: { '#k': METER_TABLE_KEY },
        ExpressionAttributeValues: { ':k': { S: `${id}:${day}` } },
        ConsistentRead: true,
        ExclusiveStartKey: start,
      }),
    );
    for (const item of page.Items ?? []) {
      if (item[METER_TABLE_SORT_KEY].S === 'estimate') estimate = Number(item.hits.N);
      else total += Number(item.hits.N);
    }
    start = page.LastEvaluatedKey;
  } while (start);
  return { total, estimate };
}
const exhaustedUntil = (id: string) => decodeKeyRecord(kvs.entries.get(keyEntry(id))!)!.exhausted_until;
const kvsRequests = () => kvs.requests.length;
const kvsWrites = () => kvs.requests.filter((q) => q.method === 'PUT').length;
const gate = (now = NOW) => loadCloudFrontFunction(keyGateCode(keyGateSettings(CONFIG)), kvs.entries, () => now);

/** The table, except that the next `n` delivery items fail to be written (after nothing else did). */
function failingPuts(n: number): DynamoDBClient {
  let left = n;
  return {
    send: (command: unknown) => {
      if (command instanceof PutItemCommand && left > 0) {
        left--;
        return Promise.reject(new Error('simulated: the invocation stopped here'));
      }
      return dynamo.send(command as GetItemCommand);
    },
  } as unknown as DynamoDBClient;
}

describe('reading a delivery', () => {
  it("counts the gate's lines per key and UTC day, wherever the line sits in the message, with their tier, and nothing else", () => {
    const a = { id: 'abcdefgh', tier: 'standard' };
    const counts = countDelivery(
      delivery([
        line(a),
        {
          at: NOW,
          message: `EDFDVBD6EXAMPLE 4TyzHTaYWb1GX1qTfsHhEqV6HUDd_BzoBZnwfnvQc_1oF26ClkoUSEQ== ${meterLine('abcdefgh', 'standard')}`,
        },
        line(a, Date.parse('2026-11-24T23:59:59Z')),
        untiered('zyxwvuts'),
        line({ id: 'pzyxwvuts', tier: 'plus one' }), // nine characters: an id that carries a tier letter
        { at: NOW, message: 'some other line' },
        { at: NOW, message: `${METER_MARK}NOT-AN-ID tier=standard` },
        { at: NOW, message: `${METER_MARK}abcdefghij tier=standard` },
      ]),
    );
    expect([...counts.entries()].sort()).toEqual([
      ['abcdefgh:2026-11-24', { id: 'abcdefgh', day: '2026-11-24', hits: 1, tier: 'standard' }],
      ['abcdefgh:2026-11-25', { id: 'abcdefgh', day: '2026-11-25', hits: 2, tier: 'standard' }],
      ['pzyxwvuts:2026-11-25', { id: 'pzyxwvuts', day: '2026-11-25', hits: 1, tier: 'plus one' }],
      ['zyxwvuts:2026-11-25', { id: 'zyxwvuts', day: '2026-11-25', hits: 1 }],
    ]);
    expect(countDelivery(delivery([line(a)], { messageType: 'CONTROL_MESSAGE' })).size).toBe(0);
  });

  it('names a delivery by its log stream and event ids: the same for a replay, another for any other delivery', () => {
    const msgs = [line(standard), line(plus)];
    const ids = [
      '31953106606966983378809025079804211143289615424298221568',
      '31953106606966983378809025079804211143289615424298221569',
    ];
    const one = delivery(msgs, { ids });
    expect(parseDelivery(one).id).toBe(parseDelivery(one).id);
    expect(parseDelivery(delivery([...msgs].reverse(), { ids: [...ids].reverse() })).id).toBe(parseDelivery(one).id);
    expect(parseDelivery(delivery(msgs, { ids: [ids[0], ids[0].replace(/8$/, '7')] })).id).not.toBe(
      parseDelivery(one).id,
    );
    expect(parseDelivery(delivery(msgs, { ids, logStream: '2026/11/25/[$LATEST]fedcba9876543210' })).id).not.toBe(
      parseDelivery(one).id,
    );
  });
});

describe('the day meter', () => {
  it('marks a key used up when its day count reaches the tier limit; the gate then answers 429 until midnight UTC', async () => {
    const { run, logged } = await meter();
    expect(await run(delivery(lines(standard, 3)))).toEqual({ counted: 3, exhausted: [] });
    expect(
      (await gate().handler(viewerRequest({ authorization: `Bearer ${standard.key}` }))).statusCode,
    ).toBeUndefined();
    // Two deliveries at once (CloudWatch Logs may invoke concurrently): the counts add up exactly.
    const both = await Promise.all([run(delivery([line(standard)])), run(delivery([line(standard), line(plus)]))]);
    expect(both.reduce((n, r) => n + r.counted, 0)).toBe(3);
    expect(both.flatMap((r) => r.exhausted)).toEqual([standard.id]);
    expect((await stored(standard.id)).total).toBe(5);
    expect(exhaustedUntil(standard.id)).toBe(MIDNIGHT);
    expect(logged.join('\n')).toContain(`key ${standard.id} used its day quota (5 requests on 2026-11-25)`);

    const refused = await gate().handler(viewerRequest({ authorization: `Bearer ${standard.key}` }));
    expect(refused.statusCode).toBe(429);
    expect(Number(refused.headers['retry-after'].value)).toBe(MIDNIGHT - NOW / 1000);
    // The other key, another tier, is untouched; after midnight the key is admitted again.
    expect((await gate().handler(viewerRequest({ authorization: `Bearer ${plus.key}` }))).statusCode).toBeUndefined();
    expect(exhaustedUntil(plus.id)).toBe(0);
    expect(
      (await gate(MIDNIGHT * 1000 + 1).handler(viewerRequest({ authorization: `Bearer ${standard.key}` }))).statusCode,
    ).toBeUndefined();
  });

  it('counts the same delivery once, however often it is processed', async () => {
    const k = await freshKey('plus');
    const { run } = await meter();
    const event = delivery(lines(k, 3));
    for (let i = 0; i < 3; i++) expect(await run(event)).toEqual({ counted: 3, exhausted: [] });
    const { total, estimate } = await stored(k.id);
    expect(total).toBe(3);
    expect(estimate).toBeGreaterThanOrEqual(total); // a replay only over-estimates
  });

  it('yields the exact count when a delivery is replayed after failing between its writes, and marks on the replay', async () => {
    const k = await freshKey('standard');
    const event = delivery(lines(k, 5));
    await expect((await meter({ dynamo: failingPuts(1) })).run(event)).rejects.toThrow(/simulated/);
    expect(exhaustedUntil(k.id)).toBe(0);
    const { run } = await meter();
    expect(await run(event)).toEqual({ counted: 5, exhausted: [k.id] });
    expect((await stored(k.id)).total).toBe(5);
    expect(exhaustedUntil(k.id)).toBe(MIDNIGHT);
  });

  it('does not read the store for keys below their limit', async () => {
    const [p, s] = [await freshKey('plus'), await freshKey('standard')];
    const { run } = await meter();
    const before = kvsRequests();
    for (let i = 0; i < 4; i++) await run(delivery([...lines(p, 25), line(s)]));
    expect(kvsRequests()).toBe(before);
    expect(await stored(p.id)).toEqual({ total: 100, estimate: 100 });
    expect(await stored(s.id)).toEqual({ total: 4, estimate: 4 });
  });

  it('writes the mark once, and leaves the store alone once the key is marked', async () => {
    const k = await freshKey('standard');
    const { run } = await meter();
    const [requests, writes] = [kvsRequests(), kvsWrites()];
    expect(await run(delivery(lines(k, 2)))).toEqual({ counted: 2, exhausted: [] });
    expect(await run(delivery(lines(k, 2)))).toEqual({ counted: 2, exhausted: [] });
    expect(kvsRequests()).toBe(requests);
    expect(await run(delivery(lines(k, 1)))).toEqual({ counted: 1, exhausted: [k.id] });
    expect(kvsWrites()).toBe(writes + 1);
    // Requests admitted before the mark propagated still arrive: counted, with no store request.
    const marked = kvsRequests();
    for (let i = 0; i < 3; i++) expect(await run(delivery(lines(k, 2)))).toEqual({ counted: 2, exhausted: [] });
    expect(kvsRequests()).toBe(marked);
    expect((await stored(k.id)).total).toBe(11);
  });

  it('counts lines of an ended day but marks nothing for them', async () => {
    const k = await freshKey('standard');
    const { run } = await meter();
    const before = kvsRequests();
    expect(await run(delivery(lines(k, 7, YESTERDAY)))).toEqual({ counted: 7, exhausted: [] });
    expect((await stored(k.id, '2026-11-24')).total).toBe(7);
    expect(kvsRequests()).toBe(before);
    expect(exhaustedUntil(k.id)).toBe(0);
  });

  it('adds up concurrent deliveries exactly and marks the key once they reach the limit', async () => {
    const [p, s] = [await freshKey('plus'), await freshKey('standard')];
    const { run } = await meter();
    const sizes = [1, 2, 3, 4, 5, 6, 7, 8];
    const results = await Promise.all(
      sizes.map((n, i) => run(delivery([...lines(p, n), ...(i < 5 ? [line(s)] : [])]))),
    );
    expect(results.reduce((n, r) => n + r.counted, 0)).toBe(36 + 5);
    expect(await stored(p.id)).toEqual({ total: 36, estimate: 36 });
    expect(await stored(s.id)).toEqual({ total: 5, estimate: 5 });
    expect(results.flatMap((r) => r.exhausted)).toEqual([s.id]);
    expect(exhaustedUntil(s.id)).toBe(MIDNIGHT);
  });

  it("looks up the tier of an older gate's lines in the store, and ignores keys it does not know", async () => {
    const k = await freshKey('standard');
    const { run } = await meter();
    expect(await run(delivery([untiered(k.id), untiered(k.id)]))).toEqual({ counted: 2, exhausted: [] });
    expect(await run(delivery([untiered(k.id), untiered(k.id), untiered(k.id)]))).toEqual({
      counted: 3,
      exhausted: [k.id],
    });
    expect(exhaustedUntil(k.id)).toBe(MIDNIGHT);
    expect(await run(delivery(Array.from({ length: 6 }, () => untiered('qqqqqqqq'))))).toEqual({
      counted: 6,
      exhausted: [],
    });
    expect(kvs.entries.has(keyEntry('qqqqqqqq'))).toBe(false);
  });

  it('writes nothing to the store itself: it has the mark writer mark the key, sending it the key id and the mark alone', async () => {
    const k = await freshKey('standard');
    const { run } = await meter(); // its store client refuses writes, as the meter's role does
    const before = lambda.invocations.length;
    expect(await run(delivery(lines(k, 5)))).toEqual({ counted: 5, exhausted: [k.id] });
    expect(lambda.invocations.slice(before)).toEqual([
      { functionName: MARK_WRITER, payload: [{ id: k.id, exhausted_until: MIDNIGHT }] },
    ]);
    expect(exhaustedUntil(k.id)).toBe(MIDNIGHT);
  });

  it('retries its conditional write when the store changed under it (a publish at the same moment)', async () => {
    const k = await freshKey('standard');
    const { run } = await meter();
    kvs.conflictNext(1);
    expect((await run(delivery(lines(k, 5)))).exhausted).toEqual([k.id]);
    expect((await gate().handler(viewerRequest({ authorization: `Bearer ${k.key}` }))).statusCode).toBe(429);
  });

  it('fails the invocation when the store keeps changing; the retried delivery marks the key and counts nothing twice', async () => {
    const [k, other] = [await freshKey('standard'), await freshKey('plus')];
    const { run } = await meter();
    const event = delivery([...lines(k, 5), line(other)]);
    kvs.conflictNext(100);
    await expect(run(event)).rejects.toThrow(/will be retried/);
    kvs.conflictNext(0);
    expect(exhaustedUntil(k.id)).toBe(0);
    expect((await stored(other.id)).total).toBe(1); // the delivery's other keys were counted all the same
    expect(await run(event)).toEqual({ counted: 6, exhausted: [k.id] });
    expect(exhaustedUntil(k.id)).toBe(MIDNIGHT);
    expect((await stored(k.id)).total).toBe(5);
    expect((await stored(other.id)).total).toBe(1);
  });
});
