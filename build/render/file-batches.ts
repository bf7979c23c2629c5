// Writes many small files through one worker thread, a batch at a time. The build writes hundreds of
// thousands of files of a few KB; written one by one with fs/promises, each costs three round trips
// through libuv's thread pool (open, write, close), and those hand-offs cost more CPU than the writes
// themselves. Here the files' bytes are laid end to end in a buffer, the buffer is handed to the
// worker whole (transferred, not copied) and written there with plain synchronous calls, and the
// worker hands it back for the next batch: the main thread renders the next batch meanwhile.

import { Worker } from 'node:worker_threads';

/** Bytes of one batch buffer: enough files that a hand-off costs little per file. */
const BATCH_BYTES = 512 * 1024;
/** Files of one batch at most: a batch of tiny files still reaches the worker soon. */
const BATCH_FILES = 256;
/** Batches handed to the worker and not yet written: one being written and one waiting, so the
 * worker never idles while the main thread renders. */
const MAX_IN_FLIGHT = 2;
/** Directories the worker remembers as made: files come in key order, so the recent ones are the
 * ones written to again; forgetting older ones costs a mkdir, remembering all grows with the tree. */
const REMEMBERED_DIRS = 4096;

/** What the worker is sent: file i is `buf[ends[i - 1] ?? 0, ends[i])`, written at `root/paths[i]`. */
interface BatchMessage {
  buf: ArrayBuffer;
  pooled: boolean;
  paths: string[];
  ends: number[];
}

/** What the worker answers for each batch, in order: the buffer back, and the first file it could
 * not write (it writes none of the batch's files after that one). */
interface BatchReply {
  buf: ArrayBuffer;
  pooled: boolean;
  failed: { path: string; code: string } | null;
}

// CommonJS, as Node runs the source of an `eval` worker; plain text rather than a function's
// source, which a bundler may rewrite (its `require` calls, say).
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const { mkdirSync, writeFileSync } = require('node:fs');
const { dirname, join } = require('node:path');
let made = new Set();
parentPort.on('message', ({ buf, pooled, paths, ends }) => {
  const bytes = Buffer.from(buf);
  let failed = null;
  for (let i = 0, at = 0; i < paths.length && !failed; at = ends[i], i++) {
    const full = join(workerData.root, paths[i]);
    try {
      const dir = dirname(full);
      if (!made.has(dir)) {
        mkdirSync(dir, { recursive: true });
        if (made.size >= ${REMEMBERED_DIRS}) made = new Set();
        made.add(dir);
      }
      writeFileSync(full, bytes.subarray(at, ends[i]));
    } catch (err) {
      failed = { path: paths[i], code: err.code ?? err.message };
    }
  }
  parentPort.postMessage({ buf, pooled, failed }, [buf]);
});
`;

class Batch {
  readonly bytes: Buffer;
  used = 0;
  readonly paths: string[] = [];
  readonly ends: number[] = [];

  constructor(
    readonly buf: ArrayBuffer,
    /** A buffer of the pool (returned to it once written), or one made for a file larger than that. */
    readonly pooled: boolean,
  ) {
    this.bytes = Buffer.from(buf);
  }

  /** Whether `most` more bytes fit (a batch always takes one file, however large). */
  fits(most: number): boolean {
    return this.paths.length === 0 || (this.paths.length < BATCH_FILES && this.used + most <= this.bytes.length);
  }

  /** Appends a file; returns its bytes (a view, valid until the batch is sent). */
  put(path: string, content: string | Uint8Array): Buffer {
    const start = this.used;
    if (typeof content === 'string') this.used += this.bytes.write(content, start, 'utf8');
    else {
      this.bytes.set(content, start);
      this.used += content.length;
    }
    this.paths.push(path);
    this.ends.push(this.used);
    return this.bytes.subarray(start, this.used);
  }
}

/** The most bytes a file's content can take in UTF-8: three per UTF-16 code unit at most. */
const mostBytes = (content: string | Uint8Array) => (typeof content === 'string' ? content.length * 3 : content.length);

export class FileBatches {
  private worker: Worker | null = null;
  private current: Batch | null = null;
  private readonly pool: ArrayBuffer[] = [];
  private buffers = 0;
  private inFlight = 0;
  private readonly waiting: (() => void)[] = [];
  /** The first write that failed, or the worker's own failure: every later call rejects with it. */
  private failure: Error | null = null;

  constructor(
    readonly root: string,
    private readonly batchBytes = BATCH_BYTES,
  ) {}

  /** Adds a file to the current batch, sending that batch first if the file does not fit; `placed`
   * gets the file's bytes as laid in the batch (before anything can send it). */
  async put(path: string, content: string | Uint8Array, placed: (bytes: Buffer) => void): Promise<void> {
    const most = mostBytes(content);
    for (;;) {
      if (this.failure) throw this.failure;
      if (this.current?.fits(most)) break;
      if (this.current) await this.send();
      else if (most > this.batchBytes) {
        // A file larger than a pooled buffer gets a buffer of its own, of its exact size.
        const size = typeof content === 'string' ? Buffer.byteLength(content, 'utf8') : content.length;
        this.current = new Batch(new ArrayBuffer(size), false);
      } else this.current = new Batch(await this.buffer(), true);
    }
    placed(this.current!.put(path, content));
  }

  /** Sends the current batch and waits until every batch is written; rejects with the first failure. */
  async flush(): Promise<void> {
    if (this.current) await this.send();
    while (this.inFlight > 0) await this.next();
    if (this.failure) throw this.failure;
  }

  /** Stops the worker: nothing more is written once this resolves (used before a failed render's
   * output is removed). Again is harmless; a later put starts a new worker. */
  async close(): Promise<void> {
    const worker = this.worker;
    this.worker = null;
    this.current = null;
    if (worker) await worker.terminate();
    // The buffers the worker held are gone with it.
    this.buffers = this.pool.length;
    this.inFlight = 0;
    this.wake();
  }

  /** A free pooled buffer: a new one while the pool is small, else the next one the worker returns. */
  private async buffer(): Promise<ArrayBuffer> {
    for (;;) {
      const free = this.pool.pop();
      if (free) return free;
      if (this.buffers < MAX_IN_FLIGHT + 1) {
        this.buffers += 1;
        return new ArrayBuffer(this.batchBytes);
      }
      await this.next();
      if (this.failure) throw this.failure;
    }
  }

  /** Hands the current batch to the worker, once fewer than MAX_IN_FLIGHT are there. */
  private async send(): Promise<void> {
    const batch = this.current!;
    this.current = null;
    while (this.inFlight >= MAX_IN_FLIGHT) {
      await this.next();
      if (this.failure) throw this.failure;
    }
    const worker = this.started();
    // Referenced only while it has work: an idle worker never keeps the process alive, a busy one does.
    if (this.inFlight++ === 0) worker.ref();
    const message: BatchMessage = { buf: batch.buf, pooled: batch.pooled, paths: batch.paths, ends: batch.ends };
    worker.postMessage(message, [batch.buf]);
  }

  private started(): Worker {
    if (this.worker) return this.worker;
    const worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { root: this.root } });
    worker.on('message', ({ buf, pooled, failed }: BatchReply) => {
      if (pooled) this.pool.push(buf);
      if (failed) this.failure ??= new Error(`cannot write ${failed.path} into ${this.root}: ${failed.code}`);
      if (--this.inFlight === 0) worker.unref();
      this.wake();
    });
    worker.on('error', (err) => {
      this.failure ??= new Error(`the writer of ${this.root} failed: ${err.message}`);
      this.wake();
    });
    worker.on('exit', () => {
      if (this.worker === worker) {
        this.failure ??= new Error(`the writer of ${this.root} stopped before its files were written`);
        this.worker = null;
      }
      this.inFlight = 0;
      this.wake();
    });
    this.worker = worker;
    return worker;
  }

  /** Resolves at the worker's next reply (or failure). */
  private next(): Promise<void> {
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  private wake(): void {
    for (const resolve of this.waiting.splice(0)) resolve();
  }
}
