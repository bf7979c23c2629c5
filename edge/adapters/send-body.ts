// Writes an answer's body as fast as its client takes it, never faster: the body is read from the
// handler's stream one chunk at a time, and each chunk is written in pieces, waiting for the socket to
// drain before the next. A client that takes nothing for the send timeout is cut off (as nginx's
// send_timeout and Go's write deadlines do); one that goes away stops the work (the stream is
// cancelled). What the server holds for the answer is charged to the unsent budget until the system
// has taken it.
import type http from 'node:http';

/** Pieces small enough that a client's progress is seen between them, and that a client that stops
 * reading leaves at most one piece in the socket's buffer besides the chunk being written. */
const PIECE_BYTES = 64 * 1024;

export type CutReason = 'client gone' | 'send timeout' | 'over its share' | 'body failed';

export interface SendOutcome {
  /** Body bytes handed to the socket. */
  sent: number;
  /** Why the answer was cut short, when it was. */
  cut?: CutReason;
  /** What the body's stream threw, when it did. */
  error?: unknown;
}

export interface BodyCharges {
  /** Charges a chunk about to be written; false when its connection is over its share. */
  charge(bytes: number): boolean;
  /** The system took (or dropped) bytes charged. */
  release(bytes: number): void;
}

/** Writes `first` (already charged), then the rest of `reader`, then ends the answer. */
export async function sendBody(
  res: http.ServerResponse,
  first: Uint8Array | null,
  reader: ReadableStreamDefaultReader<Uint8Array> | null,
  charges: BodyCharges,
  sendTimeoutMs: number,
): Promise<SendOutcome> {
  let sent = 0;
  let chunk = first;
  try {
    while (chunk) {
      for (let at = 0; at < chunk.length; at += PIECE_BYTES) {
        const piece = chunk.subarray(at, at + PIECE_BYTES);
        const more = res.write(piece, () => charges.release(piece.length));
        sent += piece.length;
        const stopped = more ? null : await progress(res, 'drain', sendTimeoutMs);
        if (stopped) return { sent, cut: stopped };
      }
      if (!reader) break;
      chunk = await nextChunk(reader);
      if (chunk && !charges.charge(chunk.length)) return { sent, cut: 'over its share' };
    }
  } catch (error) {
    return { sent, cut: 'body failed', error };
  }
  res.end();
  const stopped = res.writableFinished ? null : await progress(res, 'finish', sendTimeoutMs);
  return stopped ? { sent, cut: stopped } : { sent };
}

/** The next chunk of a body with bytes in it, or null at its end. */
export async function nextChunk(reader: ReadableStreamDefaultReader<Uint8Array>): Promise<Uint8Array | null> {
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return null;
    if (value.length > 0) return value;
  }
}

/** Waits for the answer to drain (or finish); says why not when the client went away or took
 * nothing in time. */
function progress(res: http.ServerResponse, event: 'drain' | 'finish', ms: number): Promise<CutReason | null> {
  if (res.destroyed) return Promise.resolve('client gone');
  return new Promise((resolve) => {
    const done = (why: CutReason | null) => {
      clearTimeout(timer);
      res.off(event, onProgress);
      res.off('close', onClose);
      resolve(why);
    };
    const onProgress = () => done(null);
    const onClose = () => done('client gone');
    const timer = setTimeout(() => done('send timeout'), ms);
    res.once(event, onProgress);
    res.once('close', onClose);
  });
}
