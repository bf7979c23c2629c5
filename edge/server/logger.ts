// The one logger of every isoatlas process (pino; node only, never in the Lambda@Edge bundle, which
// logs through edge/handler-log.ts). Each line is a JSON object with `time` (ISO 8601) and `level`
// (its name); what is shaped like an API key is redacted from every line as it is written, and
// credential headers by path, whatever object holds them. Client text in a line (a request's target)
// was redacted of anything that could be a piece of a key where it was taken (edge/access/redaction.ts).
//   - `isoatlas serve` (and `start`): JSON on standard output, written asynchronously in batches of a
//     few kilobytes, a line waiting at most a fifth of a second, and flushed when the process exits.
//   - The one-shot commands (build, publish, gc, keys…): their messages as text on standard error
//     (warnings prefixed `warning: `), or JSON there with `--log-format json`; standard output stays
//     for what they print as data (a key, a config, --json figures).
// Lives beside the server, the process whose every line must be JSON; the build's commands import it
// from here, as they import the contract from edge/.
import pino, { type DestinationStream, type Logger } from 'pino';
import { redactKeyShapes } from '../access/redaction.js';
import type { HandlerLog } from '../handler-log.js';

export const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];
export const LOG_FORMATS = ['human', 'json'] as const;
export type LogFormat = (typeof LOG_FORMATS)[number];

export interface LogSettings {
  /** The least level written (default info). */
  level?: LogLevel;
  /** json: one JSON object per line; human: the message alone (default json). */
  format?: LogFormat;
  /** Standard output (1), standard error (2, the default), or a stream of lines (tests). */
  destination?: 1 | 2 | { write(text: string): unknown };
}

export type { Logger };

/** Where a logged object may carry credentials: headers, wherever they are. The request log never
 * records a header; these paths hold for any line that one day would. */
export const REDACTED_PATHS = [
  'authorization',
  'headers.authorization',
  'headers.cookie',
  'headers["x-api-key"]',
  '*.headers.authorization',
  '*.headers.cookie',
  '*.headers["x-api-key"]',
];

/** What a human-format line starts with, by level: warnings and worse say so. */
const HUMAN_PREFIX: Record<string, string> = { trace: 'trace: ', debug: 'debug: ', warn: 'warning: ' };

/** Writes each JSON line as its message alone (the fields are for machines). */
function humanLines(out: { write(text: string): unknown }): DestinationStream {
  return {
    write(line: string) {
      const o = JSON.parse(line) as { level: string; msg?: string };
      out.write(`${HUMAN_PREFIX[o.level] ?? ''}${o.msg ?? line.trimEnd()}\n`);
    },
  };
}

function destinationOf(settings: LogSettings): DestinationStream {
  const format = settings.format ?? 'json';
  const to = settings.destination ?? 2;
  if (typeof to === 'object') return format === 'human' ? humanLines(to) : (to as DestinationStream);
  if (format === 'human') return humanLines(to === 1 ? process.stdout : process.stderr);
  // Standard error in order with what else the command writes there.
  if (to === 2) return pino.destination({ dest: 2, sync: true });
  return batchedOutput();
}

/** How long a line may wait on standard output for others to go with it. */
const BATCH_WAIT_MS = 200;

/** Standard output of a server: asynchronous, written in batches of a few kilobytes (one write call,
 * and one hand-off to libuv's threads, for a dozen request lines instead of one each: the most a
 * request paid for its line), a line waiting at most BATCH_WAIT_MS, and flushed on exit (pino
 * registers the flush for the destinations it makes). */
const batchedOutput = (): DestinationStream =>
  pino.destination({ dest: 1, sync: false, minLength: 4096, periodicFlush: BATCH_WAIT_MS });

/** The time as pino's isoTime writes it, made once per millisecond: a busy server writes several
 * lines in one. */
let isoMs = -1;
let isoText = '';
function isoNow(): string {
  const now = Date.now();
  if (now !== isoMs) {
    isoMs = now;
    isoText = new Date(now).toISOString();
  }
  return isoText;
}

export function createLogger(settings: LogSettings = {}): Logger {
  return pino(
    {
      level: settings.level ?? 'info',
      // No pid or hostname on every line: a service manager records them.
      base: undefined,
      timestamp: () => `,"time":"${isoNow()}"`,
      formatters: { level: (label) => ({ level: label }) },
      redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
      // Keys and pieces of them inside any text (a path, an error's message or stack) are caught on
      // the whole line.
      hooks: { streamWrite: redactKeyShapes },
    },
    destinationOf(settings),
  );
}

let current: Logger = createLogger({ format: 'human' });
let currentShape = 'human 2';

/** Sets up the process's logger (the CLI does, before a command runs); the level alone changes in
 * place when the format and destination stay. */
export function configureLogging(settings: LogSettings): Logger {
  const shape = `${settings.format ?? 'json'} ${typeof settings.destination === 'object' ? 'stream' : (settings.destination ?? 2)}`;
  if (shape === currentShape && typeof settings.destination !== 'object') current.level = settings.level ?? 'info';
  else {
    current = createLogger(settings);
    currentShape = shape;
  }
  return current;
}

/** The format the process's logger writes now. */
export function logFormat(): LogFormat {
  return currentShape.startsWith('json') ? 'json' : 'human';
}

/** The process's logger as configured now. */
export function processLogger(): Logger {
  return current;
}

type LogFn = { (msg: string): void; (fields: Record<string, unknown>, msg?: string): void };

const forward =
  (level: Exclude<LogLevel, 'silent'>): LogFn =>
  (a: string | Record<string, unknown>, msg?: string) =>
    typeof a === 'string' ? current[level](a) : msg === undefined ? current[level](a) : current[level](a, msg);

/** The process's logger, whichever is configured when a line is written: what commands import. */
export const log: { [L in Exclude<LogLevel, 'silent'>]: LogFn } & HandlerLog = {
  trace: forward('trace'),
  debug: forward('debug'),
  info: forward('info'),
  warn: forward('warn'),
  error: forward('error'),
  fatal: forward('fatal'),
};

/** A `(line) => void` callback of the older commands' options, at info level. */
export const infoLine = (line: string) => log.info(line);
