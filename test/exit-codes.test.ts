// The exit codes docs/OPERATIONS.md documents, one typical cause each, run as users run the CLI: the
// code, and a message that names what is wrong, where, and what to do. (1 is for the unexpected:
// no typical cause to run.)
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { linkedCopy, replaceFile } from './helpers/linked-copy.js';
import { freePort } from './helpers/ports.js';
import { startS3rver, type S3rverProcess } from './helpers/s3rver.js';
import { treePaths } from '../edge/contract/tree.js';

const ROOT = join(__dirname, '..');
const CREDS = { AWS_ACCESS_KEY_ID: 'S3RVER', AWS_SECRET_ACCESS_KEY: 'S3RVER' };

interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
  /** What the command told its user: stderr, or for serve (whose every line is a JSON log line on
   * stdout) stdout. */
  said: string;
}

/** One run per command line: the same arguments get the same answer (two tests read the help). */
const runs = new Map<string, Promise<CliRun>>();
function cli(args: string[]): Promise<CliRun> {
  const key = JSON.stringify(args);
  let run = runs.get(key);
  if (!run) runs.set(key, (run = spawnCli(args)));
  return run;
}

function spawnCli(args: string[]): Promise<CliRun> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [join(ROOT, 'bin/isoatlas.mjs'), ...args], {
      env: { ...process.env, ...CREDS, ISOATLAS_DEBUG: '' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    let stdout = '';
    child.stderr.setEncoding('utf8').on('data', (d) => (stderr += d));
    child.stdout.setEncoding('utf8').on('data', (d) => (stdout += d));
    // 'close': after both streams have been read to their end.
    child.on('close', (code) => resolve({ code, stdout, stderr, said: args[0] === 'serve' ? stdout : stderr }));
  });
}

let dir: string;
let s3: S3rverProcess;
let garbage: Server;
let garbageBase: string;
const tree = () => inject('fixtureTree');

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'isoatlas-exit-'));
  // s3rver starts in its own process while the trees are made.
  const starting = startS3rver(['atlas']);
  try {
    mkdirSync(join(dir, 'not-a-tree'));
    writeFileSync(join(dir, 'not-a-tree/notes.txt'), 'mine');
    // Copies of the fixture with one file changed: links to its files, the changed one a file of its own.
    linkedCopy(tree(), join(dir, 'garbage-manifest'));
    replaceFile(join(dir, 'garbage-manifest', treePaths.manifest), '{"format": ');
    linkedCopy(tree(), join(dir, 'edited'));
    const gene = join(dir, 'edited', treePaths.gene('ENSG00000186654'));
    replaceFile(gene, readFileSync(gene, 'utf8').replace('PRR5', 'PRR6'));
  } finally {
    s3 = await starting;
  }
  // An HTTP server that answers, but not with an atlas.
  garbage = createServer((_, res) => res.end('<html>hello</html>'));
  await new Promise<void>((ok) => garbage.listen(0, '127.0.0.1', ok));
  garbageBase = `http://127.0.0.1:${(garbage.address() as AddressInfo).port}`;
}, 120_000);

afterAll(async () => {
  garbage?.close();
  await s3?.stop();
  rmSync(dir, { recursive: true, force: true });
});

/** The exit code, and what the message must say: what is wrong and where, and what to do. */
type Case = [string, () => Promise<string[]>, number, RegExp[]];

const cases: Case[] = [
  ['0: help', async () => ['--help'], 0, []],
  [
    '2: publish --concurrency 0',
    async () => ['publish', '--dir', tree(), '--bucket', 'atlas', '--endpoint', s3.endpoint, '--concurrency', '0'],
    2,
    [/--concurrency <n>' argument '0' is invalid/, /expected a positive integer/],
  ],
  [
    '2: gc --grace-hours that is not a number',
    async () => ['gc', '--bucket', 'atlas', '--endpoint', s3.endpoint, '--grace-hours', 'two'],
    2,
    [/--grace-hours <h>' argument 'two' is invalid/, /expected a number ≥ 0/],
  ],
  [
    '2: mirror --concurrency 0',
    async () => ['mirror', '--from', garbageBase, '--to', join(dir, 'm0'), '--concurrency', '0'],
    2,
    [/--concurrency <n>' argument '0' is invalid/, /expected a positive integer/],
  ],
  [
    '2: mirror --from neither URL nor s3://',
    async () => ['mirror', '--from', 'ftp://example.org/atlas', '--to', join(dir, 'm1')],
    2,
    [/--from "ftp:\/\/example\.org\/atlas"/, /expected an http\(s\) base URL or s3:\/\/bucket/],
  ],
  [
    '2: mirror --to a directory that is not a mirror',
    async () => ['mirror', '--from', garbageBase, '--to', join(dir, 'not-a-tree')],
    2,
    [/--to .*not-a-tree is not empty and is not a mirror/, /refusing to write into it/],
  ],
  [
    '2: publish --endpoint without a scheme',
    async () => ['publish', '--dir', tree(), '--bucket', 'atlas', '--endpoint', '127.0.0.1:9000'],
    2,
    [
      /--endpoint 127\.0\.0\.1:9000 is not an http\(s\) URL/,
      /write it with its scheme, e\.g\. http:\/\/127\.0\.0\.1:9000/,
    ],
  ],
  [
    '3: publish --dir that is not a tree',
    async () => ['publish', '--dir', join(dir, 'not-a-tree'), '--bucket', 'atlas', '--endpoint', s3.endpoint],
    3,
    [
      /not-a-tree is not a rendered isoatlas tree \(no manifest\.json\)/,
      /build one with `isoatlas build`, or check --dir/,
    ],
  ],
  [
    '3: publish a garbage manifest',
    async () => ['publish', '--dir', join(dir, 'garbage-manifest'), '--bucket', 'atlas', '--endpoint', s3.endpoint],
    3,
    [/garbage-manifest\/manifest\.json: not JSON/, /build the tree again \(`isoatlas build --force`\)/],
  ],
  [
    '3: publish a tree edited since its build',
    async () => ['publish', '--dir', join(dir, 'edited'), '--bucket', 'atlas', '--endpoint', s3.endpoint],
    3,
    [
      /1 file of the tree .*edited does not match its manifest\.json: api\/v1\/genes\/ENSG00000186654\.json/,
      /build it again .* Nothing was written to s3:\/\/atlas\//,
    ],
  ],
  [
    '3: serve --dir that is not a tree',
    async () => ['serve', '--dir', join(dir, 'not-a-tree'), '--port', '0'],
    3,
    [
      /not-a-tree is neither a rendered isoatlas tree \(no manifest\.json\) nor a mirror/,
      /build one with `isoatlas build`/,
    ],
  ],
  [
    '3: mirror a source that is not an atlas',
    async () => ['mirror', '--from', garbageBase, '--to', join(dir, 'm2')],
    3,
    [/current\.json: .*JSON/, /check --from, tell its operator, or sync from another source/],
  ],
  [
    '4: publish to an endpoint nobody listens on',
    async () => ['publish', '--dir', tree(), '--bucket', 'atlas', '--endpoint', `http://127.0.0.1:${await freePort()}`],
    4,
    [
      /s3:\/\/atlas\/\S* at http:\/\/127\.0\.0\.1:\d+ failed: cannot reach the endpoint \(ECONNREFUSED\)/,
      /Is the server running and --endpoint right/,
    ],
  ],
  [
    '4: mirror from a source nobody listens on',
    async () => ['mirror', '--from', `http://127.0.0.1:${await freePort()}/`, '--to', join(dir, 'm3')],
    4,
    [
      /cannot read the source http:\/\/127\.0\.0\.1:\d+\/: connection refused \(ECONNREFUSED\)/,
      /To fix: start the source, or correct the host and port in --from/,
    ],
  ],
];

describe('exit codes as documented, each with a message naming what, where and what to do', () => {
  // Each case is a CLI process of its own that changes nothing another case reads: they run side by side.
  for (const [name, args, code, says] of cases) {
    it.concurrent(name, async ({ expect }) => {
      const r = await cli(await args());
      expect(r.code, r.said).toBe(code);
      for (const said of says) expect(r.said).toMatch(said);
    }, 60_000);
  }

  it('the documented list is the one the CLI prints in its help', async () => {
    const docs = readFileSync(join(ROOT, 'docs/OPERATIONS.md'), 'utf8').replace(/\s+/g, ' ');
    // Wherever the help is printed, on stderr or stdout.
    const run = await cli(['--help']);
    const help = run.stderr + run.stdout;
    for (const [n, what] of [
      [0, 'success'],
      [1, 'unexpected failure'],
      [2, 'usage error'],
      [3, 'invalid input'],
      [4, 'storage'],
    ] as const) {
      expect(docs).toContain(`${n} ${what}`);
      expect(help).toContain(`${n} ${what}`);
    }
  });
});
