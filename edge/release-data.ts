// The release's edge data (alias maps, structure map, search index), loaded from the origin on first
// use and kept for the life of the edge instance. A failed load is not cached, so the next request
// tries again.
import MiniSearch from 'minisearch';
import { treePaths, type AliasMaps, type StructureMapEntry } from './contract/tree.js';
import { searchOptions, type SearchDocument } from './contract/search.js';
import { OriginError, type Origin } from './origin.js';

const decoder = new TextDecoder();

export class ReleaseData {
  private aliasesP: Promise<AliasMaps> | null = null;
  private structuresP: Promise<Record<string, StructureMapEntry>> | null = null;
  private searchP: Promise<MiniSearch<SearchDocument>> | null = null;

  constructor(private readonly origin: Origin) {}

  aliases(): Promise<AliasMaps> {
    return (this.aliasesP ??= this.load(treePaths.aliases, (text) => JSON.parse(text) as AliasMaps, () => (this.aliasesP = null)));
  }

  structures(): Promise<Record<string, StructureMapEntry>> {
    return (this.structuresP ??= this.load(treePaths.structureMap, (text) => JSON.parse(text), () => (this.structuresP = null)));
  }

  searchIndex(): Promise<MiniSearch<SearchDocument>> {
    return (this.searchP ??= this.load(treePaths.searchIndex, (text) => MiniSearch.loadJSON<SearchDocument>(text, searchOptions), () => (this.searchP = null)));
  }

  private async load<T>(path: string, parse: (text: string) => T, forget: () => void): Promise<T> {
    try {
      const file = await this.origin.read(path);
      if (!file) throw new OriginError(`the tree at ${this.origin.description} has no ${path}: is it a rendered isoatlas tree?`, 'unavailable');
      return parse(decoder.decode(file.body));
    } catch (err) {
      forget();
      throw err instanceof OriginError ? err : new OriginError(`cannot load ${path}: ${(err as Error).message}`, 'unavailable');
    }
  }
}

/** Resolves a gene symbol (any case) or gene id (with or without version). */
export function resolveGene(aliases: AliasMaps, key: string): string | string[] | null {
  return Object.hasOwn(aliases.genes, key.toLowerCase()) ? aliases.genes[key.toLowerCase()] : null;
}

/** Resolves a transcript id (with or without version) or name, in any case. */
export function resolveIsoform(aliases: AliasMaps, key: string): string | null {
  return Object.hasOwn(aliases.isoforms, key.toLowerCase()) ? aliases.isoforms[key.toLowerCase()] : null;
}
