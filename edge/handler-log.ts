// What the edge handler and the Node adapter log through: a small interface, so that the Lambda@Edge
// bundle carries no logging library. `isoatlas serve` passes the process's logger
// (edge/server/logger.ts, which has the same methods); anywhere else (Lambda@Edge, tests) each line
// is one JSON object with a time and a level on standard error, which CloudWatch Logs keeps. Both
// redact API keys from the whole line as it is written.
import { redactKeyShapes } from './access/redaction.js';

/** One log line: fields for machines, a message for people. */
export type LogLine = (fields: Record<string, unknown>, msg?: string) => void;

export interface HandlerLog {
  info: LogLine;
  warn: LogLine;
  error: LogLine;
}

function consoleLine(level: 'info' | 'warn' | 'error'): LogLine {
  return (fields, msg) =>
    console.error(
      redactKeyShapes(
        JSON.stringify({ level, time: new Date().toISOString(), ...fields, ...(msg === undefined ? {} : { msg }) }),
      ),
    );
}

/** One JSON line per call on standard error. */
export const consoleLog: HandlerLog = {
  info: consoleLine('info'),
  warn: consoleLine('warn'),
  error: consoleLine('error'),
};

/** An error as log fields: its kind, message and stack (a thrown non-Error as its text). */
export function errorFields(err: unknown): { err: { type: string; message: string; stack?: string } } {
  if (err instanceof Error) return { err: { type: err.name, message: err.message, stack: err.stack } };
  return { err: { type: typeof err, message: String(err) } };
}
