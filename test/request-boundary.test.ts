// The Node adapter's boundary around each request: whatever throws while a request is answered,
// written or logged becomes a 500 problem+json carrying the request's id (in the body and in
// X-Request-Id, and in the log line that says what failed), and the server answers the next
// request. createNodeServer directly, over handlers and loggers that fail on purpose, and the edge
// handler's own 500 carrying the adapter's id.
import { afterEach, describe, expect, it, vi } from 'vitest';
import type http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createNodeServer, type NodeServerOptions, type RequestLogEntry } from '../edge/adapters/node-http.js';
import { createHandler, type Handler } from '../edge/handler.js';
import type { AccessControl } from '../edge/access/control.js';
import { LocalOrigin } from '../edge/origins/local.js';
import { tmpdir } from 'node:os';
import { validate } from './helpers/schemas.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

let server: http.Server | null = null;
afterEach(async () => {
  vi.restoreAllMocks();
  if (server) await new Promise((ok) => server!.close(ok));
  server = null;
});

async function start(handler: Handler, opts: NodeServerOptions = {}): Promise<string> {
  server = createNodeServer(handler, opts);
  await new Promise<void>((ok) => server!.listen(0, '127.0.0.1', ok));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

const ok: Handler = async () => new Response('{"ok":true}', { headers: { 'Content-Type': 'application/json' } });

/** Fails for paths that contain "boom", in the way `how` says; answers 200 otherwise. */
function failing(how: 'throw' | 'reject' | 'body'): Handler {
  return async (request) => {
    if (!request.url.includes('boom')) return ok(request);
    if (how === 'throw') throw new TypeError('handler bug');
    if (how === 'reject') return new Promise((_, fail) => setImmediate(() => fail(new RangeError('late handler bug'))));
    const body = new ReadableStream({ pull: (c) => c.error(new Error('body stream broke')) });
    return new Response(body, { headers: { 'Content-Type': 'application/json' } });
  };
}

/** Asserts a 500 problem with a request id, and that stderr named the same id; returns the id. */
async function expectFailure(response: Response, errors: string[]): Promise<string> {
  expect(response.status).toBe(500);
  expect(response.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  const body = (await response.json()) as { status: number; request_id: string; detail: string };
  expect(validate('Problem', body)).toEqual([]);
  expect(body.status).toBe(500);
  expect(body.request_id).toMatch(UUID);
  expect(response.headers.get('x-request-id')).toBe(body.request_id);
  expect(JSON.stringify(body)).not.toMatch(/bug|broke|\n\s+at /); // nothing of the failure's internals
  expect(errors.some((line) => line.includes(body.request_id))).toBe(true);
  return body.request_id;
}

function captureStderr(): string[] {
  const lines: string[] = [];
  vi.spyOn(console, 'error').mockImplementation((...args: unknown[]) => void lines.push(args.map(String).join(' ')));
  return lines;
}

describe('one boundary per request (createNodeServer)', () => {
  for (const how of ['throw', 'reject', 'body'] as const) {
    it(`a handler failure (${how}) is a 500 problem with a request id, and the next request is answered`, async () => {
      const errors = captureStderr();
      const entries: RequestLogEntry[] = [];
      const base = await start(failing(how), { logRequest: (e) => void entries.push(e) });
      const id = await expectFailure(await fetch(`${base}/boom`), errors);
      expect((await fetch(`${base}/fine`)).status).toBe(200);
      // The log line of the failed request carries the same id; ids are per request.
      expect(entries.map((e) => [e.path, e.status])).toEqual([
        ['/boom', 500],
        ['/fine', 200],
      ]);
      expect(entries[0].request_id).toBe(id);
      expect(entries[1].request_id).not.toBe(id);
    });
  }

  it('a HEAD request that fails gets the 500 without a body', async () => {
    captureStderr();
    const base = await start(failing('throw'));
    const r = await fetch(`${base}/boom`, { method: 'HEAD' });
    expect(r.status).toBe(500);
    expect(r.headers.get('x-request-id')).toMatch(UUID);
    expect(await r.text()).toBe('');
  });

  it('a log callback that throws (as a metrics bug would) turns that answer into a 500 with a request id; the server goes on', async () => {
    const errors = captureStderr();
    const logged: string[] = [];
    const base = await start(ok, {
      logRequest: (e) => {
        if (e.path.includes('boom')) throw new Error('metrics bug');
        logged.push(e.path);
      },
    });
    await expectFailure(await fetch(`${base}/boom`), errors);
    for (let i = 0; i < 3; i++) expect((await fetch(`${base}/fine`)).status).toBe(200);
    expect(logged).toEqual(['/fine', '/fine', '/fine']);
  });

  it('a log callback that always throws: every answer is a 500 naming its id, none escapes, the server keeps answering', async () => {
    const errors = captureStderr();
    const base = await start(ok, {
      logRequest: () => {
        throw new Error('logger down');
      },
    });
    const ids = new Set<string>();
    for (let i = 0; i < 3; i++) ids.add(await expectFailure(await fetch(`${base}/any`), errors));
    expect(ids.size).toBe(3);
    // Both the failure and the failed log line of the 500 itself were reported.
    expect(errors.filter((line) => line.includes('could not be logged')).length).toBe(3);
  });

  it('a logger (no logRequest) that throws does not escape either: failures fall back to stderr', async () => {
    const errors = captureStderr();
    const down = () => {
      throw new Error('logger down');
    };
    const base = await start(ok, { log: { info: down, warn: down, error: down } });
    await expectFailure(await fetch(`${base}/any`), errors);
    await expectFailure(await fetch(`${base}/any`), errors);
  });

  it("the handler's own 500 (access control failing unexpectedly) carries the id the adapter gave it, as the log line does", async () => {
    const errors = captureStderr();
    const access = {
      mode: 'open',
      decide: async () => {
        throw new TypeError('access bug');
      },
    } as unknown as AccessControl;
    const entries: RequestLogEntry[] = [];
    const base = await start(createHandler({ origin: new LocalOrigin(tmpdir()), access }), {
      logRequest: (e) => void entries.push(e),
    });
    const id = await expectFailure(await fetch(`${base}/api/v1/genes/PRR5`), errors);
    expect(entries.map((e) => [e.request_id, e.route, e.status])).toEqual([[id, 'gene', 500]]);
  });
});
