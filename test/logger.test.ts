// The one logger (edge/server/logger.ts): JSON lines with an ISO time and a level name, levels that
// drop what is below them, keys redacted from every line and credential headers by path; the
// one-shot commands' text on stderr (or JSON with --log-format json); and the Lambda@Edge bundle,
// which must not carry it.
import { describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { build } from 'esbuild';
import { createLogger } from '../edge/server/logger.js';
import { consoleLog } from '../edge/handler-log.js';
import { runCli } from './helpers/run.js';

const ROOT = join(__dirname, '..');
const KEY = 'isoatlas_abcdefgh_ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789ab';

function captured(settings: Parameters<typeof createLogger>[0] = {}) {
  const lines: string[] = [];
  const logger = createLogger({
    ...settings,
    destination: { write: (text: string) => void lines.push(...text.split('\n').filter(Boolean)) },
  });
  return { logger, lines };
}

describe('createLogger', () => {
  it('writes one JSON object per line with an ISO time and the level by name; below the level, nothing', () => {
    const { logger, lines } = captured({ level: 'warn' });
    logger.info({ event: 'dropped' }, 'an info line');
    logger.warn({ event: 'kept', n: 1 }, 'a warning');
    logger.error('an error');
    expect(lines).toHaveLength(2);
    const [warn, error] = lines.map((l) => JSON.parse(l));
    expect(warn).toEqual({
      level: 'warn',
      time: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      event: 'kept',
      n: 1,
      msg: 'a warning',
    });
    expect(error).toMatchObject({ level: 'error', msg: 'an error' });
  });

  it('redacts keys anywhere in a line (message, fields, error stacks) and credential headers by path', () => {
    const { logger, lines } = captured({ level: 'trace' });
    logger.info(
      { headers: { authorization: `Bearer ${KEY}`, cookie: 'session=1', accept: 'application/json' } },
      'headers',
    );
    logger.info({ request: { headers: { authorization: 'Bearer x' } } }, 'nested headers');
    logger.warn({ path: `/api/v1/genes/${KEY.replace(/_/g, '%5F')}` }, `asked for ${KEY}`);
    logger.error({ err: new Error(`store broke on ${KEY}`) }, 'failed');
    const text = lines.join('\n');
    expect(text).not.toContain(KEY.slice('isoatlas_abcdefgh_'.length));
    const [headers, nested, warned, failed] = lines.map((l) => JSON.parse(l));
    expect(headers.headers).toEqual({ authorization: '[redacted]', cookie: '[redacted]', accept: 'application/json' });
    expect(nested.request.headers.authorization).toBe('[redacted]');
    expect(warned).toMatchObject({ msg: 'asked for isoatlas_[redacted]', path: '/api/v1/genes/isoatlas_[redacted]' });
    expect(failed.err.message).toBe('store broke on isoatlas_[redacted]');
    expect(failed.err.stack).toContain('isoatlas_[redacted]');
  });

  it('human: the message alone, warnings prefixed, fields left to the JSON format', () => {
    const { logger, lines } = captured({ format: 'human' });
    logger.info({ files: 3 }, 'built 3 files');
    logger.warn(`key ${KEY} is legacy`);
    logger.error('isoatlas: failed');
    expect(lines).toEqual(['built 3 files', 'warning: key isoatlas_[redacted] is legacy', 'isoatlas: failed']);
  });
});

describe("the handler's default logger (Lambda@Edge)", () => {
  it('writes one JSON line with time and level on stderr, keys redacted', () => {
    const lines: string[] = [];
    const error = console.error;
    console.error = (...args: unknown[]) => void lines.push(args.join(' '));
    try {
      consoleLog.error({ path: `/x/${KEY}` }, 'unexpected error');
    } finally {
      console.error = error;
    }
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0])).toEqual({
      level: 'error',
      time: expect.stringMatching(/Z$/),
      path: '/x/isoatlas_[redacted]',
      msg: 'unexpected error',
    });
  });

  it('the Lambda@Edge entry imports neither pino nor the server', async () => {
    const r = await build({
      entryPoints: [join(ROOT, 'edge/lambda-entry.ts')],
      bundle: true,
      write: false,
      metafile: true,
      platform: 'node',
      format: 'cjs',
      external: ['@aws-sdk/*'],
      logLevel: 'silent',
    });
    const inputs = Object.keys(r.metafile.inputs);
    expect(inputs.some((p) => p.includes('edge/handler-log.ts'))).toBe(true);
    expect(inputs.filter((p) => /node_modules\/(pino|sonic-boom|thread-stream)\/|edge\/server\//.test(p))).toEqual([]);
  });
});

describe('one-shot commands', () => {
  const keys = async (args: string[]) => {
    const dir = mkdtempSync(join(tmpdir(), 'isoatlas-log-format-'));
    try {
      return await runCli(['keys', 'list', '--keys-dir', dir, ...args], { cwd: ROOT, timeout: 60_000 });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  };

  it('write their messages as text on stderr by default, terminal or not; stdout stays for data', async () => {
    const r = await keys([]);
    expect(r.status).toBe(0);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/^no keys in \S+registry\.json\n$/);
  });

  it('--log-format json: the same message as a JSON line on stderr', async () => {
    const r = await keys(['--log-format', 'json']);
    expect(r.status).toBe(0);
    expect(r.stdout).toBe('');
    const lines = r.stderr
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(lines).toEqual([
      { level: 'info', time: expect.any(String), msg: expect.stringMatching(/^no keys in \S+registry\.json$/) },
    ]);
  });

  it('--log-level warn: info messages are dropped', async () => {
    const r = await keys(['--log-level', 'warn']);
    expect(r.status).toBe(0);
    expect(r.stderr).toBe('');
  });
});
