// The day meter (edge/cloudfront/meter.ts) on deliveries of the shape CloudWatch Logs sends a
// subscribed Lambda function (base64 of gzipped JSON with logEvents), carrying the key gate's own
// log lines; counting in DynamoDB (dynalite, started here) and marking keys in a KeyValueStore
// stand-in, which the key gate then reads. The enforcement lag itself (log delivery plus store
// propagation, minutes) is AWS's and is documented, not simulated.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import dynalite from 'dynalite';
import type { AddressInfo } from 'node:net';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { CreateTableCommand, DynamoDBClient, GetItemCommand } from '@aws-sdk/client-dynamodb';
import { resolveAccessConfig } from '../edge/access/config.js';
import { keyGateCode, keyGateSettings } from '../edge/cloudfront/key-gate.js';
import { decodeKeyRecord, keyEntry, kvsEntries, METER_MARK } from '../edge/cloudfront/kvs-layout.js';
import { countDelivery, createMeter, METER_TABLE_KEY, type LogsSubscriptionEvent } from '../edge/cloudfront/meter.js';
import { issueKey, loadRegistry, readSecret } from '../build/keys/registry.js';
import { kvsClient } from '../build/keys/commands.js';
import { publishToStore } from '../build/keys/kvs.js';
import { startFakeKvs, type FakeKvs } from './helpers/fake-kvs.js';
import { loadCloudFrontFunction, viewerRequest } from './helpers/cloudfront-function.js';

const ARN = 'arn:aws:cloudfront::111111111111:key-value-store/6a1f3c2e-0b4d-4e8f-a9c7-5d2e1f0a3b4c';
const NOW = Date.parse('2026-11-25T15:30:00Z');
const MIDNIGHT = Date.parse('2026-11-26T00:00:00Z') / 1000;
const CONFIG = resolveAccessConfig({ key_required: { per_ip: { per_minute: 1200 }, tiers: { standard: { per_minute: 60, per_day: 5 }, plus: { per_minute: 600, per_day: 100000 } } } }, 'key-required');

/** A CloudWatch Logs subscription delivery of these messages. */
function delivery(messages: { at: number; message: string }[], messageType = 'DATA_MESSAGE'): LogsSubscriptionEvent {
  const payload = {
    messageType,
    owner: '111111111111',
    logGroup: '/aws/cloudfront/function/IsoatlasCdn-key-gate',
    logStream: '2026/11/25/[$LATEST]0123456789abcdef',
    subscriptionFilters: ['IsoatlasCdn-MeterSubscription'],
    logEvents: messages.map((m, i) => ({ id: String(i), timestamp: m.at, message: m.message })),
  };
  return { awslogs: { data: gzipSync(JSON.stringify(payload)).toString('base64') } };
}
const line = (id: string, at = NOW) => ({ at, message: `${METER_MARK}${id}` });

let db: ReturnType<typeof dynalite>;
let dynamo: DynamoDBClient;
let kvs: FakeKvs;
let keysDir: string;
let standard: { key: string; id: string };
let plus: { key: string; id: string };
const env = { id: process.env.AWS_ACCESS_KEY_ID, secret: process.env.AWS_SECRET_ACCESS_KEY };

beforeAll(async () => {
  process.env.AWS_ACCESS_KEY_ID = 'AKIDEXAMPLE';
  process.env.AWS_SECRET_ACCESS_KEY = 'test';
  db = dynalite({ createTableMs: 0 });
  await new Promise<void>((ok) => db.listen(0, '127.0.0.1', () => ok()));
  dynamo = new DynamoDBClient({ endpoint: `http://127.0.0.1:${(db.address() as AddressInfo).port}`, region: 'us-east-1' });
  await dynamo.send(new CreateTableCommand({ TableName: 'meter', AttributeDefinitions: [{ AttributeName: METER_TABLE_KEY, AttributeType: 'S' }], KeySchema: [{ AttributeName: METER_TABLE_KEY, KeyType: 'HASH' }], BillingMode: 'PAY_PER_REQUEST' }));
  kvs = await startFakeKvs(ARN);
  keysDir = mkdtempSync(join(tmpdir(), 'isoatlas-meter-'));
  const issue = async (tier: string) => {
    const { key, record } = await issueKey(keysDir, { name: 'M', affiliation: 'M', use: 'meter tests', tier });
    return { key, id: record.id };
  };
  standard = await issue('standard');
  plus = await issue('plus');
  await publishToStore(await kvsClient(kvs.url), ARN, kvsEntries(loadRegistry(keysDir).keys, readSecret(keysDir, { create: false })!));
});

afterAll(async () => {
  await kvs.close();
  await new Promise((ok) => db.close(ok));
  process.env.AWS_ACCESS_KEY_ID = env.id;
  process.env.AWS_SECRET_ACCESS_KEY = env.secret;
});

async function meter(now = NOW) {
  const lines: string[] = [];
  return { run: createMeter({ dynamo, table: 'meter', kvs: await kvsClient(kvs.url), kvsArn: ARN, config: CONFIG, now: () => now, log: (l) => lines.push(l) }), lines };
}
const hits = async (counter: string) => Number((await dynamo.send(new GetItemCommand({ TableName: 'meter', Key: { [METER_TABLE_KEY]: { S: counter } }, ConsistentRead: true }))).Item?.hits?.N ?? 0);
const gate = (now = NOW) => loadCloudFrontFunction(keyGateCode(keyGateSettings(CONFIG)), kvs.entries, () => now);

describe('countDelivery', () => {
  it('counts the gate\'s lines per key and UTC day, wherever the line sits in the message, and nothing else', () => {
    const counts = countDelivery(
      delivery([
        line('abcdefgh'),
        { at: NOW, message: `EDFDVBD6EXAMPLE 4TyzHTaYWb1GX1qTfsHhEqV6HUDd_BzoBZnwfnvQc_1oF26ClkoUSEQ== ${METER_MARK}abcdefgh` },
        line('abcdefgh', Date.parse('2026-11-24T23:59:59Z')),
        line('zyxwvuts'),
        { at: NOW, message: 'some other line' },
        { at: NOW, message: `${METER_MARK}NOT-AN-ID` },
      ]),
    );
    expect([...counts.entries()].sort()).toEqual([
      ['abcdefgh:2026-11-24', { id: 'abcdefgh', day: '2026-11-24', hits: 1 }],
      ['abcdefgh:2026-11-25', { id: 'abcdefgh', day: '2026-11-25', hits: 2 }],
      ['zyxwvuts:2026-11-25', { id: 'zyxwvuts', day: '2026-11-25', hits: 1 }],
    ]);
    expect(countDelivery(delivery([line('abcdefgh')], 'CONTROL_MESSAGE')).size).toBe(0);
  });
});

describe('the day meter', () => {
  it('marks a key used up when its day count reaches the tier limit; the gate then answers 429 until midnight UTC', async () => {
    const { run, lines } = await meter();
    expect(await run(delivery([line(standard.id), line(standard.id), line(standard.id)]))).toEqual({ counted: 3, exhausted: [] });
    expect((await gate().handler(viewerRequest({ authorization: `Bearer ${standard.key}` }))).statusCode).toBeUndefined();
    // Two deliveries at once (CloudWatch Logs may invoke concurrently): the counts add up exactly.
    const both = await Promise.all([run(delivery([line(standard.id)])), run(delivery([line(standard.id), line(plus.id)]))]);
    expect(both.reduce((n, r) => n + r.counted, 0)).toBe(3);
    expect(await hits(`${standard.id}:2026-11-25`)).toBe(5);
    expect(decodeKeyRecord(kvs.entries.get(keyEntry(standard.id))!)!.exhausted_until).toBe(MIDNIGHT);
    expect(lines.join('\n')).toContain(`key ${standard.id} used its day quota (5 requests on 2026-11-25)`);

    const refused = await gate().handler(viewerRequest({ authorization: `Bearer ${standard.key}` }));
    expect(refused.statusCode).toBe(429);
    expect(Number(refused.headers['retry-after'].value)).toBe(MIDNIGHT - NOW / 1000);
    // The other key, another tier, is untouched; after midnight the key is admitted again.
    expect((await gate().handler(viewerRequest({ authorization: `Bearer ${plus.key}` }))).statusCode).toBeUndefined();
    expect(decodeKeyRecord(kvs.entries.get(keyEntry(plus.id))!)!.exhausted_until).toBe(0);
    expect((await gate(MIDNIGHT * 1000 + 1).handler(viewerRequest({ authorization: `Bearer ${standard.key}` }))).statusCode).toBeUndefined();
  });

  it('writes the mark once, counts late lines of an ended day without marking, and ignores keys it does not know', async () => {
    const { run } = await meter();
    const writes = () => kvs.requests.filter((q) => q.method === 'PUT').length;
    const before = writes();
    expect(await run(delivery([line(standard.id)]))).toEqual({ counted: 1, exhausted: [] }); // already marked
    expect(writes()).toBe(before);
    const yesterday = Date.parse('2026-11-24T12:00:00Z');
    const r = await run(delivery(Array.from({ length: 7 }, () => line(plus.id, yesterday))));
    expect(r).toEqual({ counted: 7, exhausted: [] });
    expect(await hits(`${plus.id}:2026-11-24`)).toBe(7);
    expect(await run(delivery([line('qqqqqqqq')]))).toEqual({ counted: 1, exhausted: [] });
    expect(kvs.entries.has(keyEntry('qqqqqqqq'))).toBe(false);
  });

  it('retries its conditional write when the store changed under it (a publish at the same moment)', async () => {
    const { key, record } = await issueKey(keysDir, { name: 'N', affiliation: 'N', use: 'meter tests', tier: 'standard' });
    await publishToStore(await kvsClient(kvs.url), ARN, kvsEntries(loadRegistry(keysDir).keys, readSecret(keysDir, { create: false })!));
    const { run } = await meter();
    kvs.conflictNext(1);
    expect((await run(delivery(Array.from({ length: 5 }, () => line(record.id))))).exhausted).toEqual([record.id]);
    expect((await gate().handler(viewerRequest({ authorization: `Bearer ${key}` }))).statusCode).toBe(429);
  });
});
