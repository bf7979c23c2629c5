// The shared stores of the CDN deployment (DynamoQuotaStore, DynamoKeyRegistry, FailOpenQuotaStore)
// against a real DynamoDB protocol server: dynalite, started by this file on 127.0.0.1 and port 0.
// Counters must be atomic under concurrency, windows must turn over exactly at the minute, an outage
// of the store must never turn into 5xx, and a published revocation must reach the edge in time.
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import dynalite from 'dynalite';
import { Agent, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CreateTableCommand, DynamoDBClient, GetItemCommand, ScanCommand } from '@aws-sdk/client-dynamodb';
import { createHandler, type Handler } from '../edge/handler.js';
import { LocalOrigin } from '../edge/origins/local.js';
import { AccessControl } from '../edge/access/control.js';
import { resolveAccessConfig } from '../edge/access/config.js';
import { importServerSecret } from '../edge/access/key-format.js';
import type { KeyRegistry } from '../edge/access/key-registry.js';
import type { QuotaStore } from '../edge/access/quota-store.js';
import { DynamoQuotaStore, QUOTA_TABLE_KEY, QUOTA_TTL_ATTRIBUTE } from '../edge/access/stores/dynamodb.js';
import { DynamoKeyRegistry, KEYS_TABLE_KEY } from '../edge/access/stores/dynamodb-keys.js';
import { FailOpenQuotaStore } from '../edge/access/stores/resilient.js';
import { FileKeyRegistry } from '../edge/access/stores/key-file.js';
import { issueKey, loadRegistry, readSecret, registryPath, revokeKey } from '../build/keys/registry.js';
import { publishKeys } from '../build/keys/commands.js';

const MINUTE = 60_000;
/** A fixed instant, the first millisecond of a minute, for tests that must not straddle a window. */
const T0 = Math.floor(Date.now() / MINUTE) * MINUTE;

// ---------------------------------------------------------------------------------------------------
// dynalite and its client.

interface Dynamo {
  server: Server;
  port: number;
  client: DynamoDBClient;
}

function listen(server: Server, port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => {
      server.off('error', reject);
      resolve((server.address() as AddressInfo).port);
    });
  });
}

/** `keepAlive: false` gives every request its own connection, so once dynalite is closed every new
 * request is refused at once, while the requests already inside it finish (dynalite throws, uncaught,
 * if its database is closed under a request it is still processing). */
async function startDynamo(opts: { keepAlive?: boolean } = {}): Promise<Dynamo> {
  const server = dynalite({ createTableMs: 0, deleteTableMs: 0, updateTableMs: 0 });
  const port = await listen(server, 0);
  const client = new DynamoDBClient({
    endpoint: `http://127.0.0.1:${port}`,
    region: 'us-east-1',
    credentials: { accessKeyId: 'x', secretAccessKey: 'x' },
    ...(opts.keepAlive === false ? { requestHandler: { httpAgent: new Agent({ keepAlive: false }) } } : {}),
  });
  return { server, port, client };
}

/** Stops dynalite: it stops accepting connections, finishes what it is doing, closes its database. */
function stopDynamo(d: Dynamo): Promise<void> {
  return new Promise((resolve, reject) => d.server.close((err?: Error) => (err ? reject(err) : resolve())));
}

/** dynalite answers 300 concurrent requests in about 0.5–0.7 s on a test machine, beyond the store's
 * default 250 ms budget (meant for DynamoDB itself, which answers in milliseconds); tests that are
 * about counting, not about timeouts, give it room. */
const ROOMY_TIMEOUT_MS = 10_000;

let tableCount = 0;
async function createTable(client: DynamoDBClient, key: string, name = `t${++tableCount}-${key}`): Promise<string> {
  await client.send(
    new CreateTableCommand({
      TableName: name,
      AttributeDefinitions: [{ AttributeName: key, AttributeType: 'S' }],
      KeySchema: [{ AttributeName: key, KeyType: 'HASH' }],
      BillingMode: 'PAY_PER_REQUEST',
    }),
  );
  return name;
}
const quotaTable = (client: DynamoDBClient, name?: string) => createTable(client, QUOTA_TABLE_KEY, name);
const keysTable = (client: DynamoDBClient) => createTable(client, KEYS_TABLE_KEY);

// ---------------------------------------------------------------------------------------------------
// Keys and the handler.

let dynamo: Dynamo;
let keysDir: string;
let secret: CryptoKey;
const keys: { key: string; id: string }[] = [];

beforeAll(async () => {
  dynamo = await startDynamo();
  keysDir = mkdtempSync(join(tmpdir(), 'isoatlas-quota-dynamodb-'));
  delete process.env.ISOATLAS_KEY_SECRET; // the secret file created in keysDir, read back below
  for (const name of ['Ada', 'Grace', 'Barbara']) {
    const { key, record } = await issueKey(keysDir, { name, affiliation: 'Test Lab', use: 'DynamoDB store tests', tier: 'standard' });
    keys.push({ key, id: record.id });
  }
  secret = await importServerSecret(readSecret(keysDir, { create: false })!);
});

afterAll(async () => {
  await stopDynamo(dynamo);
  rmSync(keysDir, { recursive: true, force: true });
});

function handlerWith(opts: { store: QuotaStore; keys?: KeyRegistry; partial?: unknown; mode?: 'open' | 'key-required'; now?: () => number }): Handler {
  const access = new AccessControl({
    config: resolveAccessConfig(opts.partial ?? {}, opts.mode ?? 'key-required'),
    store: opts.store,
    keys: opts.keys ?? new FileKeyRegistry(registryPath(keysDir)),
    secret,
    now: opts.now,
  });
  return createHandler({ origin: new LocalOrigin(inject('demoTree')), access });
}

const get = (handler: Handler, key?: string, ip = '198.51.100.7') =>
  handler(new Request('http://x/api/v1/genes/PRR5', { headers: key ? { Authorization: `Bearer ${key}` } : {} }), { clientIp: ip });

async function item(client: DynamoDBClient, table: string, keyName: string, key: string) {
  return (await client.send(new GetItemCommand({ TableName: table, Key: { [keyName]: { S: key } }, ConsistentRead: true }))).Item;
}

// ---------------------------------------------------------------------------------------------------

describe('DynamoQuotaStore', () => {
  it('admits exactly the limit among 300 concurrent hits on one counter, and stores a TTL', async () => {
    const table = await quotaTable(dynamo.client);
    const store = new DynamoQuotaStore(dynamo.client, table, ROOMY_TIMEOUT_MS);
    const windowEnd = T0 + MINUTE;
    const counter = `key:abcdefgh:m:${T0 / MINUTE}`;
    const results = await Promise.all(Array.from({ length: 300 }, () => store.hit(counter, 60, windowEnd)));

    const admitted = results.filter((r) => r.admitted);
    expect(admitted).toHaveLength(60);
    // Each admitted hit saw its own count: 1…60, once each (the check-and-increment is atomic).
    expect(admitted.map((r) => r.count).sort((a, b) => a - b)).toEqual(Array.from({ length: 60 }, (_, i) => i + 1));
    expect(results.filter((r) => !r.admitted).every((r) => r.count === 60)).toBe(true);

    const stored = await item(dynamo.client, table, QUOTA_TABLE_KEY, counter);
    expect(stored?.hits?.N).toBe('60');
    const ttl = Number(stored?.[QUOTA_TTL_ATTRIBUTE]?.N);
    expect(Number.isInteger(ttl)).toBe(true);
    expect(ttl).toBeGreaterThan(windowEnd / 1000); // epoch seconds, after the window's end
    expect(ttl).toBeLessThanOrEqual(windowEnd / 1000 + 2 * 86_400);

    // One item per counter: the refused hits created nothing else.
    const scan = await dynamo.client.send(new ScanCommand({ TableName: table }));
    expect(scan.Count).toBe(1);
  });

  it('through the handler: 300 concurrent requests with one key give exactly 60 × 200 and 240 × 429', async () => {
    const table = await quotaTable(dynamo.client);
    const handler = handlerWith({ store: new DynamoQuotaStore(dynamo.client, table, ROOMY_TIMEOUT_MS), now: () => T0 + 30_000 });
    const responses = await Promise.all(Array.from({ length: 300 }, () => get(handler, keys[0].key)));
    const byStatus = (s: number) => responses.filter((r) => r.status === s);

    expect(responses.map((r) => r.status).filter((s) => s !== 200 && s !== 429)).toEqual([]);
    expect(byStatus(200)).toHaveLength(60);
    expect(byStatus(429)).toHaveLength(240);
    // Every admitted request saw a different Remaining: 59 … 0.
    expect(byStatus(200).map((r) => Number(r.headers.get('RateLimit-Remaining'))).sort((a, b) => a - b)).toEqual(Array.from({ length: 60 }, (_, i) => i));
    for (const r of byStatus(429)) {
      const retry = Number(r.headers.get('Retry-After'));
      expect(retry).toBe(30); // the clock stands 30 s into its minute
      expect(retry).toBeGreaterThanOrEqual(1);
      expect(retry).toBeLessThanOrEqual(60);
      expect(r.headers.get('Content-Type')).toMatch(/^application\/problem\+json/);
      expect(r.headers.get('RateLimit-Remaining')).toBe('0');
      const body = (await r.json()) as { status: number; detail: string };
      expect(body.status).toBe(429);
      expect(body.detail).toContain('60 requests per minute');
    }
    const counter = `key:${keys[0].id}:m:${T0 / MINUTE}`;
    expect((await item(dynamo.client, table, QUOTA_TABLE_KEY, counter))?.hits?.N).toBe('60');
    expect((await item(dynamo.client, table, QUOTA_TABLE_KEY, `ip:198.51.100.7:m:${T0 / MINUTE}`))?.hits?.N).toBe('300');
  });

  it('turns the window over exactly at the minute; Retry-After is 1 in the last second', async () => {
    const table = await quotaTable(dynamo.client);
    const clock = { now: T0 };
    const handler = handlerWith({
      store: new DynamoQuotaStore(dynamo.client, table),
      partial: { key_required: { tiers: { standard: { per_minute: 3 } } } },
      now: () => clock.now,
    });
    const key = keys[1].key;
    const boundary = T0 + MINUTE;

    clock.now = T0; // the first millisecond of the minute
    let r = await get(handler, key);
    expect([r.status, r.headers.get('RateLimit-Remaining'), r.headers.get('RateLimit-Reset')]).toEqual([200, '2', '60']);
    clock.now = boundary - 1001;
    r = await get(handler, key);
    expect([r.status, r.headers.get('RateLimit-Remaining'), r.headers.get('RateLimit-Reset')]).toEqual([200, '1', '2']);
    clock.now = boundary - 1; // the last millisecond of the minute
    r = await get(handler, key);
    expect([r.status, r.headers.get('RateLimit-Remaining'), r.headers.get('RateLimit-Reset')]).toEqual([200, '0', '1']);
    r = await get(handler, key);
    expect(r.status).toBe(429);
    expect(r.headers.get('Retry-After')).toBe('1');
    expect(r.headers.get('RateLimit-Policy')).toBe('3;w=60');

    clock.now = boundary; // the first millisecond of the next minute
    r = await get(handler, key);
    expect([r.status, r.headers.get('RateLimit-Remaining'), r.headers.get('RateLimit-Reset')]).toEqual([200, '2', '60']);
    // Two counters, one per minute window, each with its own count.
    expect((await item(dynamo.client, table, QUOTA_TABLE_KEY, `key:${keys[1].id}:m:${T0 / MINUTE}`))?.hits?.N).toBe('3');
    expect((await item(dynamo.client, table, QUOTA_TABLE_KEY, `key:${keys[1].id}:m:${T0 / MINUTE + 1}`))?.hits?.N).toBe('1');
  });
});

describe('FailOpenQuotaStore over DynamoDB', () => {
  it('keeps answering with per-instance limits while DynamoDB is down, logs once, and restores shared limits', async () => {
    // A dynalite of its own: this test stops it.
    const own = await startDynamo({ keepAlive: false });
    const table = await quotaTable(own.client, 'quota');
    const log: string[] = [];
    const retryAfterMs = 1_000;
    const clock = { now: T0 + 5_000 }; // one clock for the windows and for the fail-open retry
    const store = new FailOpenQuotaStore(new DynamoQuotaStore(own.client, table), (line) => log.push(line), retryAfterMs, () => clock.now);
    const limit = 20;
    const handler = handlerWith({ store, mode: 'open', partial: { open: { anonymous_per_ip: { per_minute: limit } } }, now: () => clock.now });
    const ip = '203.0.113.9';
    const counter = `ip:${ip}:m:${T0 / MINUTE}`;

    try {
      // Healthy: counted in DynamoDB.
      const before = await Promise.all(Array.from({ length: 5 }, () => get(handler, undefined, ip)));
      expect(before.map((r) => r.status)).toEqual([200, 200, 200, 200, 200]);
      expect((await item(own.client, table, QUOTA_TABLE_KEY, counter))?.hits?.N).toBe('5');
      expect(log).toEqual([]);

      // Load, four requests at a time; DynamoDB goes away after the first few answers.
      const statuses: number[] = [];
      let stopped: Promise<void> | null = null;
      const worker = async () => {
        while (statuses.length < 60) {
          const r = await get(handler, undefined, ip);
          statuses.push(r.status);
          if (r.status === 429) expect(Number(r.headers.get('Retry-After'))).toBeGreaterThanOrEqual(1);
          if (statuses.length === 4) stopped ??= stopDynamo(own);
        }
      };
      await Promise.all([worker(), worker(), worker(), worker()]);
      await stopped;

      expect(statuses.filter((s) => s !== 200 && s !== 429)).toEqual([]); // never 5xx
      const admitted = statuses.filter((s) => s === 200).length;
      // At most the 15 left in the shared window before the outage, plus the 20 of this instance.
      expect(admitted).toBeGreaterThanOrEqual(limit);
      expect(admitted).toBeLessThanOrEqual(limit - 5 + limit);
      // Once the load is over, the per-instance limit holds: this instance admitted its 20 already.
      for (let i = 0; i < 5; i++) {
        const r = await get(handler, undefined, ip);
        expect(r.status).toBe(429);
        expect(r.headers.get('Retry-After')).toBe('55');
      }
      expect(store.degraded).toBe(true);
      const failed = log.filter((l) => /failed/.test(l));
      expect(failed).toHaveLength(1); // once per episode, not once per request
      expect(failed[0]).toMatch(/dynamodb:quota failed .*per-instance limits/);
      expect(log).toHaveLength(1);

      // Still down when the retry comes due: tried once more, still per instance, still not logged again.
      clock.now += retryAfterMs;
      expect((await get(handler, undefined, ip)).status).toBe(429);
      expect(log).toHaveLength(1);

      // Back on the same port, empty (dynalite keeps its data in memory): the table is recreated.
      await listen(own.server, own.port);
      await quotaTable(own.client, 'quota');
      // Within retryAfterMs of the last failure the store is not tried: the per-instance count applies.
      clock.now += retryAfterMs - 1;
      expect((await get(handler, undefined, ip)).status).toBe(429);
      expect(log).toHaveLength(1);
      expect(await item(own.client, table, QUOTA_TABLE_KEY, counter)).toBeUndefined();

      clock.now += 1;
      const r = await get(handler, undefined, ip);
      expect(r.status).toBe(200);
      expect(r.headers.get('RateLimit-Remaining')).toBe(String(limit - 1)); // the new, empty shared counter
      expect(store.degraded).toBe(false);
      expect(log).toHaveLength(2);
      expect(log[1]).toMatch(/dynamodb:quota is answering again; shared limits restored/);
      expect((await item(own.client, table, QUOTA_TABLE_KEY, counter))?.hits?.N).toBe('1');
    } finally {
      if (own.server.listening) await stopDynamo(own);
      own.client.destroy();
    }
  });
});

describe('DynamoKeyRegistry', () => {
  it('serves published keys, without names, and refuses a revoked key within maxStaleMs', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'isoatlas-publish-'));
    try {
      const a = await issueKey(dir, { name: 'Rosalind', affiliation: 'King’s College', use: 'diffraction', tier: 'standard' });
      const b = await issueKey(dir, { name: 'Dorothy', affiliation: 'Oxford', use: 'crystallography', tier: 'plus' });
      const dirSecret = await importServerSecret(readSecret(dir, { create: false })!);
      const table = await keysTable(dynamo.client);
      expect(await publishKeys(dynamo.client, table, dir)).toBe(2);

      const maxStaleMs = 300;
      const registry = new DynamoKeyRegistry(dynamo.client, table, maxStaleMs);
      expect(await registry.lookup(a.record.id)).toEqual({ id: a.record.id, hash: a.record.hash, tier: 'standard', revoked_at: null });
      expect(await registry.lookup(b.record.id)).toEqual({ id: b.record.id, hash: b.record.hash, tier: 'plus', revoked_at: null });
      expect(await registry.lookup('aaaaaaaa')).toBeNull();
      // Only the edge view is published: no names, affiliations or uses, and never the key.
      const published = await item(dynamo.client, table, KEYS_TABLE_KEY, a.record.id);
      expect(Object.keys(published ?? {}).sort()).toEqual(['hash', 'id', 'tier']);
      expect(JSON.stringify(published)).not.toContain(a.key);

      const access = new AccessControl({
        config: resolveAccessConfig({}, 'key-required'),
        store: new DynamoQuotaStore(dynamo.client, await quotaTable(dynamo.client)),
        keys: registry,
        secret: dirSecret,
      });
      const handler = createHandler({ origin: new LocalOrigin(inject('demoTree')), access });
      const first = await get(handler, a.key, '198.51.100.20');
      expect(first.status).toBe(200);
      expect((await get(handler, b.key, '198.51.100.20')).headers.get('RateLimit-Limit')).toBe('600'); // tier plus

      await revokeKey(dir, a.record.id);
      expect(loadRegistry(dir).keys.find((k) => k.id === a.record.id)?.revoked_at).toBeTruthy();
      expect(await publishKeys(dynamo.client, table, dir)).toBe(2);
      const publishedAt = performance.now();
      expect((await item(dynamo.client, table, KEYS_TABLE_KEY, a.record.id))?.revoked_at?.S).toBeTruthy();

      let refused: Response | null = null;
      let delay = 0;
      while (performance.now() - publishedAt < 5_000) {
        const r = await get(handler, a.key, '198.51.100.20');
        if (r.status === 401) {
          delay = performance.now() - publishedAt;
          refused = r;
          break;
        }
        expect(r.status).toBe(200); // still accepted from the cache until maxStaleMs has passed
        await new Promise((ok) => setTimeout(ok, 20));
      }
      expect(refused, 'the revoked key was never refused').not.toBeNull();
      console.log(`DynamoKeyRegistry: revoked key refused ${delay.toFixed(0)} ms after publish (maxStaleMs ${maxStaleMs})`);
      expect(delay).toBeLessThanOrEqual(maxStaleMs + 150);
      expect(refused!.headers.get('WWW-Authenticate')).toBe('Bearer realm="isoatlas", error="invalid_token"');
      expect(((await refused!.json()) as { detail: string }).detail).toContain('revoked');
      // The other key still works.
      expect((await get(handler, b.key, '198.51.100.20')).status).toBe(200);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('FileKeyRegistry (the key source of the handler tests above)', () => {
  it('answers concurrent first lookups from the registry, not from the records before the first read', async () => {
    const registry = new FileKeyRegistry(registryPath(keysDir));
    const found = await Promise.all(Array.from({ length: 20 }, () => registry.lookup(keys[2].id)));
    expect(found.map((r) => r?.id ?? null)).toEqual(Array(20).fill(keys[2].id));
  });
});
