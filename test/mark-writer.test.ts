// The mark writer (edge/cloudfront/mark-writer.ts), the KeyValueStore's only writer besides the
// curator: against a store stand-in holding the secret, the release pin and keys (the real SDK client
// and its SigV4A signer end to end), and through Lambda's Invoke API as the day meter calls it.
import { entryBytes } from '../edge/cloudfront/kvs-capacity.js';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { kvsClient } from '../build/keys/commands.js';
import { KEY_STORE_METRICS } from '../edge/cloudfront/key-store-metrics.js';
import { CURRENT_RELEASE_ENTRY, encodeKeyRecord, keyEntry, SECRET_ENTRY } from '../edge/cloudfront/kvs-layout.js';
import { invokeFunction } from '../edge/cloudfront/invoke-function.js';
import { createMarkWriter, MAX_MARKS, type MarkReport } from '../edge/cloudfront/mark-writer.js';
import { startFakeKvs, type FakeKvs } from './helpers/fake-kvs.js';
import { startFakeLambda, TEST_CREDENTIALS, type FakeLambda } from './helpers/fake-lambda.js';

const ARN = 'arn:aws:cloudfront::111111111111:key-value-store/0c1d2e3f-4a5b-4c6d-8e7f-8091a2b3c4d5';
const NOW = Date.parse('2026-11-25T15:30:00Z');
const MIDNIGHT = Date.parse('2026-11-26T00:00:00Z') / 1000;
const WRITER = 'Test-ExhaustionMarkWriter';

/** A key id of the store (lettered, tier plus), a legacy one (revoked), and one the store lacks. */
const PLUS = 'pabcdefgh';
const REVOKED = 'qrstuvwx';
const ABSENT = 'zzzzzzzz';
const SEED = new Map<string, string>([
  [SECRET_ENTRY, 'ab'.repeat(32)],
  [CURRENT_RELEASE_ENTRY, '2026-11-01'],
  [keyEntry(PLUS), encodeKeyRecord({ hash: 'f0'.repeat(32), tier: 'plus ü', revoked_at: null, exhausted_until: 0 })],
  [
    keyEntry(REVOKED),
    encodeKeyRecord({
      hash: '0e'.repeat(32),
      tier: 'standard',
      revoked_at: '2026-10-01T08:00:00.000Z',
      exhausted_until: 0,
    }),
  ],
]);

let kvs: FakeKvs;
let lambda: FakeLambda;
const env = { id: process.env.AWS_ACCESS_KEY_ID, secret: process.env.AWS_SECRET_ACCESS_KEY };

async function writer() {
  const emitted: string[] = [];
  const logged: string[] = [];
  const write = createMarkWriter({
    kvs: await kvsClient(kvs.url),
    kvsArn: ARN,
    now: () => NOW,
    log: (l) => logged.push(l),
    emit: (l) => emitted.push(l),
    sleep: async () => {},
  });
  return { write, emitted, logged };
}
let requestsBefore = 0;
/** Writes the store saw in this test. */
const puts = () => kvs.requests.slice(requestsBefore).filter((r) => r.method === 'PUT' || r.method === 'POST').length;
const snapshot = () => new Map(kvs.entries);

beforeAll(async () => {
  process.env.AWS_ACCESS_KEY_ID = 'AKIDEXAMPLE';
  process.env.AWS_SECRET_ACCESS_KEY = 'test';
  kvs = await startFakeKvs(ARN);
  lambda = await startFakeLambda({ [WRITER]: async (event) => (await writer()).write(event) });
});

beforeEach(() => {
  kvs.entries.clear();
  for (const [k, v] of SEED) kvs.entries.set(k, v);
  kvs.conflictNext(0);
  requestsBefore = kvs.requests.length;
});

afterAll(async () => {
  await kvs.close();
  await lambda.close();
  process.env.AWS_ACCESS_KEY_ID = env.id;
  process.env.AWS_SECRET_ACCESS_KEY = env.secret;
});

describe('the mark writer', () => {
  it('refuses anything but a list of { id, exhausted_until } pairs, saying what is wrong, and writes nothing', async () => {
    const { write } = await writer();
    const refusals: [unknown, RegExp][] = [
      [{ id: PLUS, exhausted_until: MIDNIGHT }, /is not a list of 0 to 100 marks/],
      [
        Array.from({ length: MAX_MARKS + 1 }, () => ({ id: PLUS, exhausted_until: MIDNIGHT })),
        /not a list of 0 to 100/,
      ],
      ['secret', /is not a list/],
      [[null], /mark 0 \(null\) is not an object/],
      [[[PLUS, MIDNIGHT]], /mark 0 .* is not an object/],
      [[{ id: PLUS }], /mark 0 has the fields \["id"\], not exactly id and exhausted_until/],
      [[{ id: PLUS, exhausted_until: MIDNIGHT, hash: '00' }], /fields \["exhausted_until","hash","id"\]/],
      [[{ key: 'secret', value: 'ff' }], /fields \["key","value"\]/],
      [JSON.parse(`[{"id":"${PLUS}","exhausted_until":${MIDNIGHT},"__proto__":{}}]`), /fields .*__proto__/],
      [[{ id: SECRET_ENTRY, exhausted_until: MIDNIGHT }], /mark 0: id "secret" is not a key id/],
      [[{ id: CURRENT_RELEASE_ENTRY, exhausted_until: MIDNIGHT }], /id "release:current" is not a key id/],
      [[{ id: keyEntry(PLUS), exhausted_until: MIDNIGHT }], /id "key:pabcdefgh" is not a key id/],
      [[{ id: 'PABCDEFGH', exhausted_until: MIDNIGHT }], /is not a key id/],
      [[{ id: 'pabcdefghi', exhausted_until: MIDNIGHT }], /is not a key id/],
      [[{ id: 7, exhausted_until: MIDNIGHT }], /id 7 is not a key id/],
      [[{ id: PLUS, exhausted_until: String(MIDNIGHT) }], /exhausted_until "\d+" is not a whole number of seconds/],
      [[{ id: PLUS, exhausted_until: MIDNIGHT + 0.5 }], /is not a whole number of seconds/],
      [
        [{ id: PLUS, exhausted_until: MIDNIGHT * 1000 }],
        /is not a whole number of seconds from .* to 2026-11-26T16:30:00.000Z/,
      ],
      [[{ id: PLUS, exhausted_until: 0 }], /exhausted_until 0 is not .* from 2026-11-25T14:30:00.000Z/],
      [[{ id: PLUS, exhausted_until: -1 }], /is not a whole number/],
      // One bad mark among good ones: none is written.
      [
        [
          { id: PLUS, exhausted_until: MIDNIGHT },
          { id: SECRET_ENTRY, exhausted_until: MIDNIGHT },
        ],
        /mark 1: id "secret" is not a key id/,
      ],
    ];
    const before = snapshot();
    for (const [event, message] of refusals) {
      const refused = write(event);
      await expect(refused, JSON.stringify(event).slice(0, 80)).rejects.toThrow(message);
      await expect(refused).rejects.toMatchObject({ name: 'MarkRequestRefused' });
      await expect(refused).rejects.toThrow(/mark writer: refused: .*nothing was written/);
    }
    expect(kvs.entries).toEqual(before);
    expect(puts()).toBe(0);
  });

  it('sets the mark of a key the store holds, and creates no entry for a key it lacks', async () => {
    const { write } = await writer();
    const before = snapshot();
    expect(
      await write([
        { id: PLUS, exhausted_until: MIDNIGHT },
        { id: ABSENT, exhausted_until: MIDNIGHT },
      ]),
    ).toEqual([
      { id: PLUS, outcome: 'marked' },
      { id: ABSENT, outcome: 'no-such-key' },
    ] satisfies MarkReport[]);
    expect(kvs.entries.has(keyEntry(ABSENT))).toBe(false);
    expect([...kvs.entries.keys()].sort()).toEqual([...before.keys()].sort());
    expect(puts()).toBe(1);
  });

  it('rewrites exhausted_until only: the hash, tier and revocation, the secret and the pin stay byte for byte', async () => {
    const { write } = await writer();
    const before = snapshot();
    expect(await write([{ id: REVOKED, exhausted_until: MIDNIGHT }])).toEqual([{ id: REVOKED, outcome: 'marked' }]);
    expect(await write([{ id: PLUS, exhausted_until: MIDNIGHT }])).toEqual([{ id: PLUS, outcome: 'marked' }]);
    for (const [name, value] of before) {
      const now = kvs.entries.get(name)!;
      if (name === keyEntry(PLUS) || name === keyEntry(REVOKED)) {
        // The same bytes with the mark's number replaced, and nothing else.
        expect(now).toBe(value.replace('"exhausted_until":0}', `"exhausted_until":${MIDNIGHT}}`));
        expect(now).not.toBe(value);
      } else expect(now).toBe(value);
    }
    expect(kvs.entries.get(keyEntry(PLUS))).toContain('"tier":"plus ü"');
    expect(kvs.entries.get(keyEntry(REVOKED))).toContain('"revoked_at":"2026-10-01T08:00:00.000Z"');
  });

  it('leaves an entry alone that is not a key record in the exact form of the layout', async () => {
    const { write, logged } = await writer();
    const odd = [
      `{"hash":"${'f0'.repeat(32)}","tier":"plus","revoked_at":null,"exhausted_until":0,"note":"kept"}`,
      `{"tier":"plus","hash":"${'f0'.repeat(32)}","revoked_at":null,"exhausted_until":0}`,
      `{ "hash":"${'f0'.repeat(32)}","tier":"plus","revoked_at":null,"exhausted_until":0}`,
      'not json',
    ];
    for (const value of odd) {
      kvs.entries.set(keyEntry(PLUS), value);
      expect(await write([{ id: PLUS, exhausted_until: MIDNIGHT }])).toEqual([
        { id: PLUS, outcome: 'not-a-key-record' },
      ]);
      expect(kvs.entries.get(keyEntry(PLUS))).toBe(value);
    }
    expect(puts()).toBe(0);
    expect(logged.join('\n')).toContain(`${keyEntry(PLUS)} is not a key record`);
  });

  it('never shortens a mark: a key marked as long or longer is left as it is', async () => {
    const { write } = await writer();
    expect(await write([{ id: PLUS, exhausted_until: MIDNIGHT }])).toEqual([{ id: PLUS, outcome: 'marked' }]);
    const marked = kvs.entries.get(keyEntry(PLUS));
    for (const until of [MIDNIGHT, MIDNIGHT - 3600])
      expect(await write([{ id: PLUS, exhausted_until: until }])).toEqual([{ id: PLUS, outcome: 'already-marked' }]);
    expect(kvs.entries.get(keyEntry(PLUS))).toBe(marked);
    expect(puts()).toBe(1);
  });

  it('writes on the ETag it read: retries when a publish wrote first, fails the invocation when the store keeps changing', async () => {
    const { write } = await writer();
    kvs.conflictNext(1);
    expect(await write([{ id: PLUS, exhausted_until: MIDNIGHT }])).toEqual([{ id: PLUS, outcome: 'marked' }]);
    kvs.conflictNext(100);
    await expect(write([{ id: REVOKED, exhausted_until: MIDNIGHT }])).rejects.toThrow(/changed/);
    expect(kvs.entries.get(keyEntry(REVOKED))).toBe(SEED.get(keyEntry(REVOKED)));
  });

  it("reports the store's size after writing: one bare EMF line, namespace isoatlas, the store's ARN its one dimension", async () => {
    const { write, emitted } = await writer();
    await write([{ id: PLUS, exhausted_until: MIDNIGHT }]);
    expect(emitted).toHaveLength(1);
    const [line] = emitted;
    expect(line).not.toContain('\n');
    const doc = JSON.parse(line);
    const m = KEY_STORE_METRICS;
    expect(doc._aws).toEqual({
      Timestamp: NOW,
      CloudWatchMetrics: [
        {
          Namespace: 'isoatlas',
          Dimensions: [['KeyValueStore']],
          Metrics: [
            { Name: 'KeyStoreBytes', Unit: 'Bytes' },
            { Name: 'KeyStoreItems', Unit: 'Count' },
          ],
        },
      ],
    });
    // The figures are the store's after the write, as DescribeKeyValueStore gave them.
    const bytes = [...kvs.entries].reduce((n, [k, v]) => n + entryBytes(k, v), 0);
    expect(doc).toMatchObject({ [m.dimension]: ARN, [m.bytes]: bytes, [m.items]: SEED.size });
    expect(Object.keys(doc).sort()).toEqual(['KeyStoreBytes', 'KeyStoreItems', 'KeyValueStore', '_aws']);
    // Once per invocation, whatever was written.
    await write([{ id: ABSENT, exhausted_until: MIDNIGHT }]);
    expect(emitted).toHaveLength(2);
    // An empty list (the stack's daily call) writes nothing and reports the size all the same.
    const before = new Map(kvs.entries);
    expect(await write([])).toEqual([]);
    expect(emitted).toHaveLength(3);
    expect(kvs.entries).toEqual(before);
  });

  it("answers the meter over Lambda's Invoke API: reports as the payload, a refusal as the function's error", async () => {
    const invoke = (payload: unknown) =>
      invokeFunction({
        functionName: WRITER,
        payload,
        region: 'us-east-1',
        credentials: async () => TEST_CREDENTIALS,
        endpoint: lambda.url,
      });
    expect(await invoke([{ id: PLUS, exhausted_until: MIDNIGHT }])).toEqual([{ id: PLUS, outcome: 'marked' }]);
    await expect(invoke([{ id: SECRET_ENTRY, exhausted_until: MIDNIGHT }])).rejects.toThrow(
      `${WRITER} failed (Unhandled): MarkRequestRefused: mark writer: refused: mark 0: id "secret" is not a key id`,
    );
    expect(kvs.entries.get(SECRET_ENTRY)).toBe(SEED.get(SECRET_ENTRY));
  });
});
