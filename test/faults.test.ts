// Faults behind the edge: the quota store dies under load and comes back, and the origin answers
// errors, resets, garbage or nothing at all. The edge must keep answering, within bounded time, with
// the documented status: 502 (bad answer, reset, refused), 503 (origin busy), 504 (timeout), each a
// problem+json with Retry-After; and never hang or answer 500.
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { spawn, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CreateTableCommand, DynamoDBClient, GetItemCommand } from '@aws-sdk/client-dynamodb';
import { S3Client } from '@aws-sdk/client-s3';
import { createHandler, type Handler } from '../edge/handler.js';
import { LocalOrigin } from '../edge/origins/local.js';
import { HttpOrigin } from '../edge/origins/http.js';
import { S3RawOrigin } from '../edge/origins/s3.js';
import { AccessControl } from '../edge/access/control.js';
import { resolveAccessConfig } from '../edge/access/config.js';
import { importServerSecret } from '../edge/access/key-format.js';
import { DynamoQuotaStore, QUOTA_TABLE_KEY } from '../edge/access/stores/dynamodb.js';
import { FailOpenQuotaStore } from '../edge/access/stores/resilient.js';
import { FileKeyRegistry } from '../edge/access/stores/key-file.js';
import { issueKey, readSecret, registryPath } from '../build/keys/registry.js';
import { validate } from './helpers/schemas.js';

const ROOT = join(__dirname, '..');
const sleep = (ms: number) => new Promise((ok) => setTimeout(ok, ms));

async function expectProblem(response: Response, status: number) {
  expect(response.status).toBe(status);
  expect(response.headers.get('Content-Type')).toMatch(/^application\/problem\+json/);
  expect(response.headers.get('Retry-After')).toBe('5');
  const body = (await response.json()) as { status: number; detail: string };
  expect(validate('Problem', body)).toEqual([]);
  expect(body.status).toBe(status);
  return body;
}

// ---------------------------------------------------------------------------------------------------
// (a) The quota store goes away mid-load and comes back.

/** dynalite in a process of its own, so it can be killed outright (SIGKILL: connections reset,
 * nothing finishes) and started again on the same port. */
async function startDynalite(port = 0): Promise<{ port: number; child: ChildProcess }> {
  const script = `require('dynalite')({ createTableMs: 0 }).listen(${port}, '127.0.0.1', function () { console.log('DYNALITE_PORT=' + this.address().port); });`;
  const child = spawn(process.execPath, ['-e', script], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  const actual = await new Promise<number>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (d) => {
      out += d;
      const m = /DYNALITE_PORT=(\d+)/.exec(out);
      if (m) resolve(Number(m[1]));
    });
    child.stderr!.on('data', (d) => (out += d));
    child.once('exit', (code) => reject(new Error(`dynalite exited ${code}: ${out}`)));
    setTimeout(() => reject(new Error(`dynalite did not start: ${out}`)), 20_000).unref();
  });
  return { port: actual, child };
}

function kill(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  const exited = new Promise<void>((ok) => child.once('exit', () => ok()));
  child.kill('SIGKILL');
  return exited;
}

describe('the quota store dies under load and comes back', () => {
  let keysDir: string;
  let dynalite: { port: number; child: ChildProcess };
  let client: DynamoDBClient;

  beforeAll(async () => {
    keysDir = mkdtempSync(join(tmpdir(), 'isoatlas-faults-keys-'));
    delete process.env.ISOATLAS_KEY_SECRET;
    dynalite = await startDynalite();
    client = new DynamoDBClient({ endpoint: `http://127.0.0.1:${dynalite.port}`, region: 'us-east-1', credentials: { accessKeyId: 'x', secretAccessKey: 'x' }, maxAttempts: 1 });
  });
  afterAll(async () => {
    await kill(dynalite.child);
    client.destroy();
    rmSync(keysDir, { recursive: true, force: true });
  });

  const createQuotaTable = () =>
    client.send(
      new CreateTableCommand({
        TableName: 'quota',
        AttributeDefinitions: [{ AttributeName: QUOTA_TABLE_KEY, AttributeType: 'S' }],
        KeySchema: [{ AttributeName: QUOTA_TABLE_KEY, KeyType: 'HASH' }],
        BillingMode: 'PAY_PER_REQUEST',
      }),
    );
  const hits = async (counter: string) =>
    Number((await client.send(new GetItemCommand({ TableName: 'quota', Key: { [QUOTA_TABLE_KEY]: { S: counter } }, ConsistentRead: true }))).Item?.hits?.N ?? 0);

  it('keeps answering keyed requests (fail-open, never 5xx, never hanging) and counts in DynamoDB again once it is back', async () => {
    await createQuotaTable();
    const { key, record } = await issueKey(keysDir, { name: 'Load', affiliation: 'Lab', use: 'fault tests', tier: 'standard' });
    const secret = await importServerSecret(readSecret(keysDir, { create: false })!);
    const log: string[] = [];
    const retryAfterMs = 500;
    const store = new FailOpenQuotaStore(new DynamoQuotaStore(client, 'quota', 1_000), (line) => log.push(line), retryAfterMs);
    // Limits high enough that this load is never refused: the test is about the store, not the limits.
    const config = resolveAccessConfig({ key_required: { per_ip: { per_minute: 100_000 }, tiers: { standard: { per_minute: 100_000, per_day: 1_000_000 } } } }, 'key-required');
    const handler = createHandler({ origin: new LocalOrigin(inject('demoTree')), access: new AccessControl({ config, store, keys: new FileKeyRegistry(registryPath(keysDir)), secret }) });
    const minute = () => Math.floor(Date.now() / 60_000);
    const counter = () => `key:${record.id}:m:${minute()}`;

    const results: { status: number; ms: number; phase: string }[] = [];
    let phase = 'healthy';
    let running = true;
    const worker = async () => {
      while (running) {
        const started = performance.now();
        const r = await handler(new Request('http://x/api/v1/genes/PRR5', { headers: { Authorization: `Bearer ${key}` } }), { clientIp: '198.51.100.1' });
        await r.arrayBuffer();
        results.push({ status: r.status, ms: performance.now() - started, phase });
      }
    };
    const by = (p: string) => results.filter((r) => r.phase === p);
    /** Waits until `p` has seen `n` answers (and at least `ms`), so a slow machine still loads each phase. */
    const phaseFor = async (p: string, n: number, ms: number) => {
      const started = performance.now();
      while (by(p).length < n || performance.now() - started < ms) {
        if (performance.now() - started > 30_000) throw new Error(`only ${by(p).length} answers while ${p}`);
        await sleep(20);
      }
    };
    // One request first, so the edge's tables are loaded before the clock of the phases starts.
    expect((await handler(new Request('http://x/api/v1/release', { headers: { Authorization: `Bearer ${key}` } }), { clientIp: '198.51.100.1' })).status).toBe(200);
    const load = Promise.all(Array.from({ length: 4 }, worker));
    try {
      await phaseFor('healthy', 20, 300);
      expect(await hits(counter())).toBeGreaterThan(0); // counted in DynamoDB while healthy

      phase = 'down';
      await kill(dynalite.child);
      await phaseFor('down', 20, 1_500); // several retry periods with the store gone
      expect(log.filter((l) => /failed/.test(l))).toHaveLength(1); // noticed, and logged once

      phase = 'restarting';
      dynalite = await startDynalite(dynalite.port); // the same port: the edge's client is unchanged
      await createQuotaTable(); // dynalite keeps nothing across a restart
      await phaseFor('restarting', 5, retryAfterMs + 700);
      phase = 'back';
      await phaseFor('back', 20, 300);
    } finally {
      running = false;
      await load;
    }

    for (const p of ['healthy', 'down', 'restarting', 'back']) expect(by(p).length, `requests answered while ${p}`).toBeGreaterThan(3);
    expect(results.filter((r) => r.status !== 200).map((r) => `${r.phase} ${r.status}`)).toEqual([]);
    // Nothing hung: the store's 1 s budget bounds every request, however the store fails.
    expect(Math.max(...results.map((r) => r.ms))).toBeLessThan(2_500);
    console.log(`quota store outage: ${results.length} requests, ${by('down').length} while down, slowest ${Math.max(...results.map((r) => r.ms)).toFixed(0)} ms`);

    // Back: shared counting resumed (a fresh table, so everything in it was counted after the restart).
    expect(store.degraded).toBe(false);
    expect(await hits(counter())).toBeGreaterThan(0);
    expect(log.filter((l) => /failed/.test(l))).toHaveLength(1); // once per episode
    expect(log.some((l) => /answering again; shared limits restored/.test(l))).toBe(true);
    const now = await hits(counter());
    await handler(new Request('http://x/api/v1/release', { headers: { Authorization: `Bearer ${key}` } }), { clientIp: '198.51.100.1' });
    expect(await hits(counter())).toBe(now + 1);
  });
});

// ---------------------------------------------------------------------------------------------------
// (b) The origin fails.

type Mode = 'ok' | '500' | '503' | '429' | 'reset' | 'silent' | 'cut-body' | 'slow-body' | 'garbage';

describe('the origin fails', () => {
  let server: http.Server;
  let base: string;
  let mode: Mode = 'ok';
  const sockets = new Set<Socket>();
  const TIMEOUT_MS = 600;

  beforeAll(async () => {
    const tree = inject('demoTree');
    server = http.createServer((req, res) => {
      // S3 requests carry the bucket as the first path segment.
      const path = decodeURIComponent(new URL(req.url!, 'http://x').pathname).replace(/^\/(bucket\/)?/, '');
      switch (mode) {
        case 'ok': {
          let body: Buffer;
          try {
            body = readFileSync(join(tree, path));
          } catch {
            res.writeHead(404).end();
            return;
          }
          res.writeHead(200, { 'Content-Length': body.length, 'Content-Type': 'application/json' }).end(body);
          return;
        }
        case '500':
        case '503':
        case '429':
          res.writeHead(Number(mode), { 'Content-Type': 'text/plain' }).end('no');
          return;
        case 'reset':
          req.socket.destroy();
          return;
        case 'silent':
          return; // never answers
        case 'cut-body':
          res.writeHead(200, { 'Content-Length': 100_000 });
          res.write('{"release":');
          setTimeout(() => req.socket.destroy(), 20);
          return;
        case 'slow-body':
          res.writeHead(200, { 'Content-Length': 100_000 });
          res.write('{"release":'); // and nothing more
          return;
        case 'garbage':
          req.socket.end('SSH-2.0-OpenSSH_9.0\r\n\r\n');
          return;
      }
    });
    server.on('connection', (s) => {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
    });
    await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  });
  afterAll(async () => {
    for (const s of sockets) s.destroy();
    await new Promise((ok) => server.close(ok));
  });

  const cases: [Mode, number][] = [
    ['500', 502],
    ['garbage', 502],
    ['reset', 502],
    ['cut-body', 502],
    ['503', 503],
    ['429', 503],
    ['silent', 504],
    ['slow-body', 504],
  ];

  function origins(): [string, Handler][] {
    const s3 = new S3Client({ endpoint: base, forcePathStyle: true, region: 'us-east-1', credentials: { accessKeyId: 'x', secretAccessKey: 'x' }, maxAttempts: 1 });
    return [
      ['HttpOrigin', createHandler({ origin: new HttpOrigin(base, TIMEOUT_MS) })],
      ['S3RawOrigin', createHandler({ origin: new S3RawOrigin(s3, 'bucket', '', TIMEOUT_MS) })],
    ];
  }

  const get = (handler: Handler, path: string) => handler(new Request(`http://x/api/v1${path}`));

  it.each(cases)('origin fault %s → %i with problem+json and Retry-After, within the time budget, through HTTP and S3 origins', async (fault, status) => {
    for (const [name, handler] of origins()) {
      // Healthy first: the manifest is loaded and release.json verified (and kept in memory).
      mode = 'ok';
      expect((await get(handler, '/release')).status, `${name} healthy`).toBe(200);

      // A file this handler has not read yet, while the origin fails.
      mode = fault;
      const started = performance.now();
      const response = await get(handler, '/genes/PRR5');
      const elapsed = performance.now() - started;
      expect(response.status, `${name} under ${fault}`).toBe(status);
      const body = await expectProblem(response, status);
      expect(body.detail).not.toContain('127.0.0.1'); // internals stay in the log
      expect(elapsed, `${name} under ${fault}`).toBeLessThan(TIMEOUT_MS + 1_000);

      // The failure is not remembered: the same file is served once the origin is back.
      mode = 'ok';
      expect((await get(handler, '/genes/PRR5')).status, `${name} after ${fault}`).toBe(200);
    }
  });

  it.each(cases)('origin fault %s before anything was read (the manifest itself) → %i', async (fault, status) => {
    for (const [name, handler] of origins()) {
      mode = fault;
      const response = await get(handler, '/release');
      expect(response.status, `${name} under ${fault}`).toBe(status);
      await expectProblem(response, status);
      mode = 'ok';
      expect((await get(handler, '/release')).status, `${name} after ${fault}`).toBe(200);
    }
  });

  it('answers 502 when the origin refuses connections', async () => {
    const closed = http.createServer();
    await new Promise<void>((ok) => closed.listen(0, '127.0.0.1', ok));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((ok) => closed.close(ok));
    const handler = createHandler({ origin: new HttpOrigin(`http://127.0.0.1:${port}/`, TIMEOUT_MS) });
    await expectProblem(await handler(new Request('http://x/api/v1/release')), 502);
  });
});
