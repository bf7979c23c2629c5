// Reads the tree from a local directory: the local server and offline mirrors.
import { readFile } from 'node:fs/promises';
import { resolve, sep } from 'node:path';
import { OriginError, type Origin, type OriginObject } from '../origin.js';

export class LocalOrigin implements Origin {
  readonly description: string;
  private readonly root: string;

  constructor(root: string) {
    this.root = resolve(root);
    this.description = `dir:${this.root}`;
  }

  async read(path: string): Promise<OriginObject | null> {
    const full = resolve(this.root, path);
    // Defence in depth: tree paths come from the alias maps, but never read outside the root.
    if (!full.startsWith(this.root + sep)) return null;
    try {
      return { body: await readFile(full) };
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' || code === 'ENOTDIR' || code === 'EISDIR') return null;
      throw new OriginError(`cannot read ${path} from ${this.description}: ${code ?? (err as Error).message}`, 'unavailable');
    }
  }
}
