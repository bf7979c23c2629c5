// The dispatch table (edge/contract/dispatch.ts), walked entry by entry. Every entry is answered by
// `isoatlas serve` as its access class says (open: never keyed or counted; metrics: only with
// --metrics; front: only a trusted front's GET; checked: keyed and counted), and named by its own
// label in the request log and the metrics; the handler alone (the CDN's) answers only what applies
// there, and the Lambda@Edge adapter sends only pinned structure files on to the bucket; the nginx
// config has a location for every entry the front refuses, a map line for every file it answers, and
// nothing else of its own.
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import http from 'node:http';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  answerLabels,
  dispatch,
  dispatchTable,
  fileKinds,
  systemPaths,
  type FileKindId,
  type SystemPathId,
} from '../edge/contract/dispatch.js';
import { routes } from '../edge/contract/routes.js';
import { contentTypeOf } from '../edge/contract/tree.js';
import { POINTER_KEY, parsePointer } from '../edge/contract/store-layout.js';
import { createHandler, releasesOf, type RequestContext } from '../edge/handler.js';
import { LocalOrigin } from '../edge/origins/local.js';
import { StoreOrigin } from '../edge/origins/store-origin.js';
import { createLambdaEdgeHandler, type CloudFrontRequestEvent } from '../edge/adapters/lambda-edge.js';
import { locateStructureFile } from '../edge/endpoints/structure-redirect.js';
import { FRONT_MANIFEST_HEADER } from '../edge/server/serve.js';
import { nginxConfig } from '../edge/server/nginx-config.js';
import { FRONT_FILE_HEADERS, FRONT_TARGET_HEADER, FRONT_TYPE_HEADER } from '../edge/server/front-file.js';
import { readStructureMap } from './helpers/tree.js';
import { startServer, type RunningServer } from './helpers/server.js';
import { eventually } from './helpers/wait.js';
import { rawRequest as request } from './helpers/raw-request.js';
import { samples as entrySamples, servedStatuses } from './helpers/dispatch-samples.js';

const ROOT = join(__dirname, '..');
const tree = () => inject('fixtureTree');
/** The address the servers trust as their front; the test's other requests come from 127.0.0.1. */
const FRONT = '127.0.0.2';

let work: string;
let mirror: string;
let release: string;
let manifestSha: string;
let structureId: string;
let key: string;
/** Over the mirror, keys required, with --metrics, trusting FRONT. */
let full: RunningServer;
/** Over the tree, no option: no metrics, no front, every request served. */
let plain: RunningServer;

function cli(args: string[]): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [join(ROOT, 'bin/isoatlas.mjs'), ...args], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => (stdout += c));
    child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
    child.once('error', reject);
    child.once('close', (status) => resolve({ status, stdout, stderr }));
  });
}

/** Every entry with the requests that name it (test/helpers/dispatch-samples.ts). */
const samples = () => entrySamples({ release, manifestSha, structureId });

/** The request log's label for a request, once the line is written. */
async function loggedLabel(server: RunningServer, path: string, method = 'GET'): Promise<string> {
  const lineOf = (logs: string) =>
    logs
      .split('\n')
      .filter((l) => l.startsWith('{') && l.includes('"status"'))
      .map((l) => JSON.parse(l) as { path: string; method: string; route: string })
      .filter((l) => l.path === path && l.method === method)
      .pop();
  const logs = await server.untilLogged((text) => lineOf(text) !== undefined, `the log line of ${method} ${path}`);
  return lineOf(logs)!.route;
}

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), 'isoatlas-dispatch-'));
  mirror = join(work, 'mirror');
  // The tree as a mirror's source: its files over HTTP.
  const files = http.createServer((req, res) => {
    const path = join(tree(), decodeURIComponent(new URL(req.url!, 'http://x').pathname));
    if (!path.startsWith(tree())) return void res.writeHead(404).end();
    readFile(path).then(
      (body) => res.writeHead(200).end(body),
      () => res.writeHead(404).end(),
    );
  });
  await new Promise<void>((ok) => files.listen(0, '127.0.0.1', ok));
  const synced = await cli([
    'mirror',
    '--from',
    `http://127.0.0.1:${(files.address() as AddressInfo).port}/`,
    '--to',
    mirror,
  ]);
  files.close();
  expect(synced.status, synced.stderr).toBe(0);
  const pointer = parsePointer(await readFile(join(mirror, POINTER_KEY), 'utf8'));
  release = pointer.release;
  manifestSha = pointer.manifest_sha256;
  structureId = Object.keys(readStructureMap(tree()))[0];
  const keys = join(work, 'keys');
  const issued = await cli([
    'keys',
    'issue',
    '--keys-dir',
    keys,
    '--name',
    'dispatch test',
    '--affiliation',
    'isoatlas',
    '--use',
    'walks the dispatch table',
  ]);
  expect(issued.status, issued.stderr).toBe(0);
  key = issued.stdout.trim().split('\n').pop()!;
  [full, plain] = await Promise.all([
    startServer({
      dir: mirror,
      extraArgs: ['--access', 'key-required', '--keys-dir', keys, '--metrics', '--trust-proxy', FRONT],
    }),
    startServer({ dir: tree(), extraArgs: ['--keys-dir', join(work, 'plain-keys')] }),
  ]);
}, 300_000);

afterAll(async () => {
  await Promise.all([full?.stop(), plain?.stop()]);
  rmSync(work, { recursive: true, force: true });
});

describe('the dispatch table', () => {
  it('names each entry once, in order: system paths, file kinds, routes; its labels are its entries and other', () => {
    const groups = dispatchTable.map((e) => e.group);
    expect(groups).toEqual(
      [...groups].sort((a, b) => ['system', 'file', 'route'].indexOf(a) - ['system', 'file', 'route'].indexOf(b)),
    );
    expect(dispatchTable.map((e) => e.label)).toEqual([
      ...Object.keys(systemPaths),
      ...Object.keys(fileKinds),
      ...routes.map((r) => r.id),
    ]);
    expect(new Set(answerLabels).size).toBe(answerLabels.length);
    expect(answerLabels).toEqual([...dispatchTable.map((e) => e.label), 'other']);
  });

  it('dispatches each sample to its own entry, file kinds only where the scope serves them', () => {
    const everything = { structureFiles: true, storeFiles: true };
    for (const { label, paths } of samples()) {
      for (const path of paths) {
        const d = dispatch(new URL(path, 'http://x').pathname, everything);
        expect(d.group === 'none' ? 'other' : d.id, path).toBe(label);
        const applies = label in fileKinds ? fileKinds[label as FileKindId].applies : 'always';
        if (applies !== 'always')
          expect(dispatch(new URL(path, 'http://x').pathname, { ...everything, [applies]: false }).group, path).toBe(
            'none',
          );
      }
    }
  });
});

describe('isoatlas serve answers every entry as its access class says', () => {
  it('with keys required, --metrics and a trusted front: open, metrics and front entries unkeyed and uncounted, checked ones keyed and counted; each logged with its label', async () => {
    const bearer = { Authorization: `Bearer ${key}` };
    // The server re-reads the key registry when it changes, on its own schedule.
    await eventually(
      () => request(full.base, '/api/v1/release', { headers: bearer }),
      (r) => r.status === 200,
      'the issued key to be accepted',
    );
    for (const entry of dispatchTable) {
      const paths = samples().find((s) => s.label === entry.label)!.paths;
      for (const path of paths) {
        const what = `${entry.label} ${path}`;
        switch (entry.access) {
          case 'open':
          case 'metrics': {
            for (const method of ['GET', 'POST']) {
              const r = await request(full.base, path, { method });
              expect(r.status, what).toBe(200);
              expect(r.headers['ratelimit-remaining'], what).toBeUndefined();
              expect(await loggedLabel(full, path, method), what).toBe(entry.label);
            }
            break;
          }
          case 'front': {
            const asked = {
              headers: {
                [FRONT_MANIFEST_HEADER]: manifestSha,
                [FRONT_TARGET_HEADER]: '/api/v1/release',
                [FRONT_TYPE_HEADER]: contentTypeOf('x.json'),
                ...bearer,
              },
            };
            const admitted = await request(full.base, path, { from: FRONT, ...asked });
            expect(admitted.status, what).toBe(204);
            expect(admitted.headers['ratelimit-remaining'], what).toBeDefined();
            // The file nginx sends, in the mirror's store.
            expect(admitted.headers[FRONT_FILE_HEADERS.file.toLowerCase()], what).toMatch(/^\/objects\/[0-9a-f]{2}\//);
            // Not from the front, or not a GET: no endpoint, as for the handler.
            const notFront = await request(full.base, path, asked);
            expect(notFront.status, what).toBe(404);
            expect(notFront.headers['content-type'], what).toBe('application/problem+json; charset=utf-8');
            expect(await loggedLabel(full, path), what).toBe('other');
            expect((await request(full.base, path, { from: FRONT, method: 'POST', ...asked })).status, what).toBe(405);
            break;
          }
          case 'checked': {
            const refused = await request(full.base, path);
            expect(refused.status, what).toBe(401);
            expect(refused.headers['content-type'], what).toBe('application/problem+json; charset=utf-8');
            const served = await request(full.base, path, { headers: bearer });
            expect(servedStatuses(entry.label), what).toContain(served.status);
            expect(served.headers['ratelimit-remaining'], what).toBeDefined();
            expect(await loggedLabel(full, path), what).toBe(entry.label);
            break;
          }
        }
      }
    }
  });

  it('counts each entry under its own label in the metrics, every label one of the table', async () => {
    const text = (await request(full.base, '/metrics')).text;
    const labels = [...text.matchAll(/^isoatlas_requests_total\{route="([^"]+)",status="(\d+|none)"\} (\d+)$/gm)].map(
      (m) => m[1],
    );
    expect(labels.length).toBeGreaterThan(0);
    for (const label of labels) expect(answerLabels).toContain(label);
    // Admissions the front asks are not logged or counted: the front logs the request they stood for.
    for (const entry of dispatchTable.filter((e) => e.label !== 'admission'))
      expect(labels, entry.label).toContain(entry.label);
  });

  it('without --metrics, a tree server answers /metrics, /admission and store files as no endpoint, the rest as the mirror does', async () => {
    for (const { label, paths } of samples()) {
      for (const path of paths) {
        const r = await request(plain.base, path, { from: FRONT, headers: { [FRONT_MANIFEST_HEADER]: manifestSha } });
        const answered =
          label === 'health' ||
          (label in fileKinds ? fileKinds[label as FileKindId].applies !== 'storeFiles' : !(label in systemPaths));
        if (answered) expect(servedStatuses(label), path).toContain(r.status);
        else expect(r.status, path).toBe(404);
        expect(await loggedLabel(plain, path), path).toBe(answered ? label : 'other');
      }
    }
  });
});

describe('the handler alone, as at the CDN', () => {
  it('answers no system path, structure file or store file; the Lambda adapter sends pinned structure files on to their object', async () => {
    const origin = new StoreOrigin(new LocalOrigin(mirror));
    const releases = releasesOf({ origin });
    const handler = createHandler({ origin }, releases);
    for (const { label, paths } of samples()) {
      for (const path of paths) {
        const context: RequestContext = {};
        const r = await handler(new Request(`http://atlas.test${path}`), context);
        const here = label === 'docs_file' || routes.some((route) => route.id === label);
        expect(context.answeredBy, path).toBe(here ? label : 'other');
        if (!here) expect(r.status, path).toBe(404);
      }
    }
    const lambda = createLambdaEdgeHandler(handler, (request) => locateStructureFile(request, releases));
    const event = (uri: string): CloudFrontRequestEvent => ({
      Records: [
        {
          cf: {
            config: { distributionDomainName: 'd.cloudfront.net', eventType: 'origin-request' },
            request: { clientIp: '203.0.113.1', method: 'GET', uri, querystring: '', headers: {} },
          },
        },
      ],
    });
    const pinned = await lambda(event(`/releases/${release}/structures/${structureId}.cif`));
    expect(pinned).toMatchObject({
      uri: expect.stringMatching(/^\/objects\/[0-9a-f]{2}\/[0-9a-f]{62}$/),
      querystring: '',
    });
    for (const uri of [`/structures/${structureId}.cif`, `/releases/${release}/nothing`, '/health']) {
      expect(await lambda(event(uri)), uri).toMatchObject({
        status: '404',
        headers: { 'content-type': [{ value: 'application/problem+json; charset=utf-8' }] },
      });
    }
  });
});

describe('the nginx front written from the table', () => {
  it('has a location for every entry the front refuses, and a path shape, of its kind, for every file kind and file route it may serve from files, and for no other entry', async () => {
    for (const dir of [tree(), mirror]) {
      const { text } = await nginxConfig({
        dir,
        upstream: '127.0.0.1:9',
        listen: '127.0.0.1:9',
        serverName: 'atlas.test',
        accessLog: join(work, 'front.log'),
        compressedDir: `${tree()}.compressed`,
        version: 'test',
      });
      // The kind map's keys: `"~^1 <path pattern>" <kind>;`, nginx's `\\` read as `\`.
      const shapes = [...text.matchAll(/^ {4}"~\^1 (\S+)" (json|mmcif);$/gm)].map((m) => ({
        re: new RegExp(`^${m[1].replace(/\\\\/g, '\\')}`),
        kind: m[2],
      }));
      const kindOf = (path: string) => shapes.find((s) => s.re.test(path))?.kind ?? null;
      const exact = [...text.matchAll(/^ {4}location = (\S+) \{ return 404; \}$/gm)].map((m) => m[1]);
      for (const entry of dispatchTable) {
        const paths = samples().find((s) => s.label === entry.label)!.paths;
        if (entry.group === 'system')
          expect(exact.includes(systemPaths[entry.label as SystemPathId].path), entry.label).toBe(
            entry.front === 'refuse',
          );
        const route = routes.find((r) => r.id === entry.label);
        const expected =
          entry.group === 'file' && entry.front === 'files'
            ? 'mmcif'
            : entry.group === 'route' && route && 'file' in route
              ? 'json'
              : null;
        for (const path of paths) expect(kindOf(path.split('?')[0]), `${entry.label} ${path} ${dir}`).toBe(expected);
      }
      expect(exact.sort()).toEqual(
        dispatchTable
          .filter((e) => e.front === 'refuse')
          .map((e) => systemPaths[e.label as SystemPathId].path)
          .sort(),
      );
    }
  });
});
