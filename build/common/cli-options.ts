// Option parsers and the exit-code mapping shared by the full CLI (cli.ts) and the small server
// CLI (server-cli.ts): one place says what an option may be and which code each failure exits with.
import { CommanderError, InvalidArgumentError, Option, type Command } from 'commander';
import { isIP } from 'node:net';
import { BadInputError, UsageError } from './errors.js';
import { explainStorageError } from './storage-errors.js';
import {
  LOG_FORMATS,
  LOG_LEVELS,
  configureLogging,
  log,
  logFormat,
  type LogFormat,
  type LogLevel,
} from '../../edge/server/logger.js';

// The AWS SDK warns on every run under Node 20 that its releases after January 2027 will need 22;
// isoatlas supports Node 20 (README), so the warning is not the user's to act on. This is its
// documented switch, set before any command loads the SDK (they import it when they run).
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

/** Exit codes: 2 the command line is wrong, 3 an input is, 4 storage (S3) cannot be reached or refuses. */
export const EXIT = { ok: 0, failure: 1, usage: 2, badInput: 3, storage: 4 } as const;

export const DEFAULT_PORT = process.env.PORT ?? '8080';

export function parseMode(value: string): 'open' | 'key-required' {
  if (value !== 'open' && value !== 'key-required') throw new InvalidArgumentError('expected open or key-required');
  return value;
}

export function parsePort(value: string): number {
  if (!/^\d+$/.test(value) || Number(value) > 65535)
    throw new InvalidArgumentError('expected a port number from 0 to 65535');
  return Number(value);
}

/** A repeatable IP address option (`--trust-proxy`). */
export function collectAddress(value: string, previous: string[]): string[] {
  if (!isIP(value))
    throw new InvalidArgumentError(
      `expected an IP address such as 127.0.0.1 or ::1 (the address the front connects from), not "${value}"`,
    );
  return [...previous, value];
}

export function parseBaseUrl(value: string): string {
  try {
    const url = new URL(value);
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error();
    return value.replace(/\/$/, '');
  } catch {
    throw new InvalidArgumentError('expected an http(s) URL');
  }
}

/** A threshold or a duration: a decimal number, 0 or more (`Number` alone would take "abc" as NaN). */
export function nonNegativeNumber(v: string): number {
  if (!/^(\d+\.?\d*|\.\d+)(e[-+]?\d+)?$/i.test(v))
    throw new InvalidArgumentError('expected a number ≥ 0, e.g. 48 or 1e-5');
  return Number(v);
}

export function positiveInteger(v: string): number {
  if (!/^[1-9]\d*$/.test(v)) throw new InvalidArgumentError('expected a positive integer');
  return Number(v);
}

/** Runs a program and maps what went wrong to a message and an exit code. */
export async function runProgram(cli: Command, argv: string[], name = 'isoatlas'): Promise<number> {
  try {
    await cli.parseAsync(argv);
    return EXIT.ok;
  } catch (err) {
    if (err instanceof CommanderError) {
      return err.code === 'commander.helpDisplayed' || err.code === 'commander.version' || err.exitCode === 0
        ? EXIT.ok
        : EXIT.usage;
    }
    if (err instanceof UsageError) {
      log.error({ event: 'failed', exit: EXIT.usage }, `${name}: ${err.message} (run with --help for usage)`);
      return EXIT.usage;
    }
    if (err instanceof BadInputError) {
      log.error({ event: 'failed', exit: EXIT.badInput }, `${name}: invalid input: ${err.message}`);
      return EXIT.badInput;
    }
    const storage = explainStorageError(err);
    if (storage) {
      log.error({ event: 'failed', exit: EXIT.storage }, `${name}: ${storage.message}`);
      return EXIT.storage;
    }
    log.error({ event: 'failed', exit: EXIT.failure }, `${name}: ${(err as Error).message}`);
    if (process.env.ISOATLAS_DEBUG) log.error((err as Error).stack ?? '');
    return EXIT.failure;
  }
}

/** Commands that serve: every line they write is JSON, on standard output. */
const SERVING = new Set(['serve', 'start']);

/** The logging options of every command (`--log-level`, and `--log-format` where it has a choice),
 * and the hooks that set the process's logger up from them before the command runs. Called once the
 * program holds all its commands. */
export function addLogOptions(cli: Command): void {
  const leaves = (c: Command): Command[] => (c.commands.length ? c.commands.flatMap(leaves) : [c]);
  for (const command of leaves(cli)) {
    command.addOption(
      new Option('--log-level <level>', 'the least level of the lines written').choices(LOG_LEVELS).default('info'),
    );
    if (!SERVING.has(command.name())) {
      command.addOption(
        new Option(
          '--log-format <format>',
          'human: messages as text lines on stderr; json: one JSON object per line (time, level, msg, fields)',
        )
          .choices(LOG_FORMATS)
          .default('human'),
      );
    }
  }
  // Set as soon as a serving command is named, so that even its command-line errors are JSON lines.
  cli.hook('preSubcommand', (_, sub) => {
    if (SERVING.has(sub.name())) configureLogging({ format: 'json', destination: 1 });
  });
  cli.hook('preAction', (_, action) => {
    const o = action.opts() as { logLevel?: LogLevel; logFormat?: LogFormat };
    const serving = SERVING.has(action.name());
    configureLogging({
      level: o.logLevel ?? 'info',
      format: serving ? 'json' : (o.logFormat ?? 'human'),
      destination: serving ? 1 : 2,
    });
  });
  // Commander's own errors (an unknown option, a bad value) are JSON lines too when the logger is.
  const writeErr = (text: string) => {
    if (logFormat() === 'json') for (const line of text.split('\n').filter(Boolean)) log.error(line);
    else process.stderr.write(text);
  };
  const all = (c: Command): Command[] => [c, ...c.commands.flatMap(all)];
  for (const command of all(cli)) command.configureOutput({ writeErr });
}
