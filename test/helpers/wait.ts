// Waiting for what a test can observe: output of a child process, lines another process appends to
// a file, state a server shows only when asked. The first two resolve on the event itself, not on a
// timer. Every wait has the same bound, far above what a loaded machine takes: it only turns what
// never comes into a failure that names it, instead of a bound of a few seconds that a busy machine
// can overrun.
import { watch } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { basename, dirname } from 'node:path';
import type { Readable } from 'node:stream';

export const WAIT_BOUND_MS = 60_000;

function bounded<T>(what: string, run: (settle: (value: T) => void, fail: (err: Error) => void) => () => void) {
  return new Promise<T>((resolve, reject) => {
    let cleanup = () => {};
    const timer = setTimeout(
      () => finish(() => reject(new Error(`waited ${WAIT_BOUND_MS / 1000} s for ${what}`))),
      WAIT_BOUND_MS,
    );
    let done = false;
    const finish = (act: () => void) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      cleanup();
      act();
    };
    cleanup = run(
      (value) => finish(() => resolve(value)),
      (err) => finish(() => reject(err)),
    );
  });
}

/** Resolves with `text()` once `test` accepts it, checked now and after each chunk the streams emit
 * (`text` must already hold the chunk: its own listeners are added before this one). */
export function untilOutput(
  streams: Readable[],
  text: () => string,
  test: (text: string) => boolean,
  what: string,
): Promise<string> {
  return bounded(what, (settle, fail) => {
    const check = () => {
      const now = text();
      if (test(now)) settle(now);
    };
    const ended = () => fail(new Error(`the output ended before ${what}:\n${text().slice(-2000)}`));
    for (const s of streams) s.on('data', check).once('close', ended);
    check();
    return () => {
      for (const s of streams) s.off('data', check).off('close', ended);
    };
  });
}

/** Resolves with the file's text once `test` accepts it, checked now and on each change to the
 * file's directory (the file may not exist yet). */
export function untilFile(path: string, test: (text: string) => boolean, what: string): Promise<string> {
  return bounded(what, (settle, fail) => {
    let reading = false;
    let again = false;
    const check = async () => {
      if (reading) return void (again = true);
      reading = true;
      try {
        do {
          again = false;
          const text = await readFile(path, 'utf8').catch(() => '');
          if (test(text)) return settle(text);
        } while (again);
      } catch (err) {
        fail(err as Error);
      } finally {
        reading = false;
      }
    };
    const watcher = watch(dirname(path), (_, name) => {
      if (name === null || name === basename(path)) void check();
    });
    void check();
    return () => watcher.close();
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
