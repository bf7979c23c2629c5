// Keys from a registry file on disk (the local server and mirrors): re-read when it changes, checked
// at most every `checkEveryMs`, so `isoatlas keys revoke` takes effect within seconds.
import { readFile, stat } from 'node:fs/promises';
import type { EdgeKeyRecord, KeyRegistry } from '../key-registry.js';

export class FileKeyRegistry implements KeyRegistry {
  readonly description: string;
  private records = new Map<string, EdgeKeyRecord>();
  private loadedMtime = -1;
  private nextCheck = 0;
  private pending: Promise<void> | null = null;

  constructor(
    private readonly path: string,
    private readonly checkEveryMs = 2_000,
  ) {
    this.description = `file:${path}`;
  }

  async lookup(id: string): Promise<EdgeKeyRecord | null> {
    if (Date.now() >= this.nextCheck) this.pending ??= this.refresh().finally(() => (this.pending = null));
    // Every lookup waits for a read in progress, not only the one that started it: refresh() moves
    // nextCheck forward before reading, and the first read starts from no records at all.
    if (this.pending) await this.pending;
    return this.records.get(id) ?? null;
  }

  private async refresh(): Promise<void> {
    this.nextCheck = Date.now() + this.checkEveryMs;
    let mtime: number;
    try {
      mtime = (await stat(this.path)).mtimeMs;
    } catch {
      this.records = new Map(); // no registry file: no valid keys
      this.loadedMtime = -1;
      return;
    }
    if (mtime === this.loadedMtime) return;
    const parsed = JSON.parse(await readFile(this.path, 'utf8')) as { keys: EdgeKeyRecord[] };
    this.records = new Map(
      parsed.keys.map((k) => [k.id, { id: k.id, hash: k.hash, tier: k.tier, revoked_at: k.revoked_at }]),
    );
    this.loadedMtime = mtime;
  }
}
