// Option parsers and the exit-code mapping shared by the full CLI (cli.ts) and the small server
// CLI (server-cli.ts): one place says what an option may be and which code each failure exits with.
import { CommanderError, InvalidArgumentError, type Command } from 'commander';
import { isIP } from 'node:net';
import { BadInputError, UsageError } from './errors.js';
import { explainStorageError } from './storage-errors.js';

// The AWS SDK warns on every run under Node 20 that its releases after January 2027 will need 22;
// isoatlas supports Node 20 (README), so the warning is not the user's to act on. This is its
// documented switch, set before any command loads the SDK (they import it when they run).
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

/** Exit codes: 2 the command line is wrong, 3 an input is, 4 storage (S3) cannot be reached or refuses. */
export const EXIT = { ok: 0, failure: 1, usage: 2, badInput: 3, storage: 4 } as const;

export const log = (line: string) => process.stderr.write(`${line}\n`);

export const DEFAULT_PORT = process.env.PORT ?? '8080';

export function parseMode(value: string): 'open' | 'key-required' {
  if (value !== 'open' && value !== 'key-required') throw new InvalidArgumentError('expected open or key-required');
  return value;
}

export function parsePort(value: string): number {
  if (!/^\d+$/.test(value) || Number(value) > 65535) throw new InvalidArgumentError('expected a port number from 0 to 65535');
  return Number(value);
}

/** A repeatable IP address option (`--trust-proxy`). */
export function collectAddress(value: string, previous: string[]): string[] {
  if (!isIP(value)) throw new InvalidArgumentError(`expected an IP address such as 127.0.0.1 or ::1 (the address the front connects from), not "${value}"`);
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
  if (!/^(\d+\.?\d*|\.\d+)(e[-+]?\d+)?$/i.test(v)) throw new InvalidArgumentError('expected a number ≥ 0, e.g. 48 or 1e-5');
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
      return err.code === 'commander.helpDisplayed' || err.code === 'commander.version' || err.exitCode === 0 ? EXIT.ok : EXIT.usage;
    }
    if (err instanceof UsageError) {
      log(`${name}: ${err.message} (run with --help for usage)`);
      return EXIT.usage;
    }
    if (err instanceof BadInputError) {
      log(`${name}: invalid input: ${err.message}`);
      return EXIT.badInput;
    }
    const storage = explainStorageError(err);
    if (storage) {
      log(`${name}: ${storage.message}`);
      return EXIT.storage;
    }
    log(`${name}: ${(err as Error).message}`);
    if (process.env.ISOATLAS_DEBUG) log((err as Error).stack ?? '');
    return EXIT.failure;
  }
}
