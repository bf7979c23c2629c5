// Waiting for what a test can observe: output of a child process, lines another process appends to
// a file, state a server shows only when asked. The first two resolve on the event itself, not on a
// timer. Every wait has the same bound, far above what a loaded machine takes: it only turns what
// never comes into a failure that names it, instead of a bound of a few seconds that a busy machine
// can overrun.
import { watch } from 'node:fs';
import { basename, dirname } from 'node:path';
import type { Readable } from 'node:stream';

export const WAIT_BOUND_MS = 60_000;

/** Where a change may show: calls `check` on each, `fail` when none can come any more; returns its
 * clean-up. */
export type Source = (check: () => void, fail: (why: string) => void) => () => void;

/** Each chunk a child's streams emit (the text the caller reads must already hold it: its own
 * listeners are added before this one); their end, once every one has closed. */
export const output =
  (...streams: Readable[]): Source =>
  (check, fail) => {
    let open = streams.length;
    const closed = () => {
      check();
      if (--open === 0) fail('the output ended');
    };
    for (const s of streams) s.on('data', check).once('close', closed);
    return () => {
      for (const s of streams) s.off('data', check).off('close', closed);
    };
  };

/** Each change to a file another process writes (watched through its directory: it may not exist
 * yet). */
export const changesOf =
  (path: string): Source =>
  (check) => {
    const watcher = watch(dirname(path), (_, name) => {
      if (name === null || name === basename(path)) check();
    });
    return () => watcher.close();
  };

/** Resolves with `text()` once `test` accepts it: checked now and at each change of any source. */
export function until(
  sources: Source[],
  text: () => string,
  test: (text: string) => boolean,
  what: string,
): Promise<string> {
  return new Promise<string>((resolve, reject) => {
    const cleanups: (() => void)[] = [];
    let done = false;
    const finish = (act: () => void) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      for (const c of cleanups) c();
      act();
    };
    const check = () => {
      const now = text();
      if (test(now)) finish(() => resolve(now));
    };
    const fail = (why: string) => finish(() => reject(new Error(`${why} before ${what}:\n${text().slice(-2000)}`)));
    const timer = setTimeout(() => fail(`waited ${WAIT_BOUND_MS / 1000} s`), WAIT_BOUND_MS);
    for (const source of sources) cleanups.push(source(check, fail));
    check();
  });
}

/** For state a test can see only by asking (a server re-reads a file on its own schedule): asks
 * again every `everyMs` until `done` accepts the answer. */
export async function eventually<T>(
  ask: () => Promise<T>,
  done: (answer: T) => boolean,
  what: string,
  everyMs = 100,
): Promise<T> {
  const end = Date.now() + WAIT_BOUND_MS;
  for (;;) {
    const answer = await ask();
    if (done(answer)) return answer;
    if (Date.now() > end) throw new Error(`waited ${WAIT_BOUND_MS / 1000} s for ${what}`);
    await new Promise((ok) => setTimeout(ok, everyMs));
  }
}

/** `promise`, or a failure naming `what` when it has not settled within the bound: for an event a
 * test holds a promise of (a callback it passed), rather than output it can read. */
export function bounded<T>(promise: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const bound = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`waited ${WAIT_BOUND_MS / 1000} s for ${what}`)), WAIT_BOUND_MS);
  });
  return Promise.race([promise, bound]).finally(() => clearTimeout(timer));
}
