// dynalite (a DynamoDB-compatible server on LevelDB, used by test/quota-dynamodb.test.ts) ships no types.
declare module 'dynalite' {
  import type { Server } from 'node:http';

  interface DynaliteOptions {
    path?: string;
    ssl?: boolean;
    createTableMs?: number;
    deleteTableMs?: number;
    updateTableMs?: number;
    maxItemSizeKb?: number;
    verbose?: boolean;
    debug?: boolean;
  }

  /** An http.Server speaking the DynamoDB protocol; close() also closes its database, and listen()
   * after close() starts again with an empty (recreated) store. */
  export default function dynalite(options?: DynaliteOptions): Server;
}
