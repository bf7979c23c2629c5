// `isoatlas import pfam|ted|models …`: the annotation tools' native outputs, mapped to the release's
// isoforms and added like any track (validated, one transaction, provenance recorded).
import type { Command } from 'commander';
import { basename } from 'node:path';
import { updateReleaseDb, type Db } from '../../release-db/store.js';
import { insertTrack, type Located, type TrackInput, type TrackRecords } from '../tracks.js';
import type { Track } from '../../release-db/schema.js';
import { mapDomains, parseDomtblout, parseTedConsensus, readIdMapping, releaseProteins, TED_LEVELS, type TedLevel } from './domains.js';
import { readStructureMapping, structureRecords } from './structures.js';
import { UsageError } from '../../errors.js';

interface Provenance {
  db: string;
  source: string;
  version?: string;
  description?: string;
}

/** Runs `collect` on a copy of the release (for the proteins it needs) and inserts what it returns. */
async function importNative<T extends Track>(
  opts: Provenance & { file: string },
  track: T,
  collect: (db: Db) => Promise<{ located: Located<TrackRecords[T]>[]; unmapped: string[]; note?: string }>,
  log: (line: string) => void,
) {
  let summary = '';
  await updateReleaseDb(opts.db, async (db) => {
    const { located, unmapped, note } = await collect(db);
    const input: TrackInput = { track, file: opts.file, source: opts.source, version: opts.version, description: opts.description, generated: false };
    const n = await insertTrack(db, input, located);
    summary = `imported ${n} ${track} records from ${basename(opts.file)} into ${opts.db}${note ? ` (${note})` : ''}; ${unmapped.length} ids matched no isoform${unmapped.length ? ` (e.g. ${unmapped.slice(0, 3).join(', ')})` : ''}`;
  });
  log(summary);
}

const common = (c: Command) =>
  c
    .requiredOption('--db <db>', 'release database to update (changed atomically)')
    .option('--version <version>', 'version of the tool or database')
    .option('--description <text>', 'one line on how the records were made');

export function addNativeImportCommands(imp: Command, log: (line: string) => void): void {
  common(
    imp
      .command('pfam')
      .description('Pfam domains from HMMER --domtblout (hmmscan or hmmsearch), filtered by per-domain i-Evalue, envelope coordinates.')
      .requiredOption('--file <domtblout>', 'HMMER --domtblout output')
      .option('--mapping <tsv>', 'id mapping (query id → transcript id), when query ids are not transcript ids')
      .option('--max-ievalue <x>', 'keep domains with i-Evalue at most this', (v) => Number(v), 1e-5)
      .option('--source <name>', 'source name', 'Pfam (HMMER domtblout)'),
  ).action(async (o: Provenance & { file: string; mapping?: string; maxIevalue: number }) => {
    await importNative(o, 'domains', async (db) => {
      const parsed = await parseDomtblout(o.file, { maxIEvalue: o.maxIevalue });
      const mapped = mapDomains(parsed.rows, o.mapping ? await readIdMapping(o.mapping) : new Map(), releaseProteins(db));
      return { ...mapped, note: `${parsed.total} hits, ${parsed.filtered} above the i-Evalue cut-off ${o.maxIevalue}` };
    }, log);
  });

  common(
    imp
      .command('ted')
      .description('TED domains from a TED consensus file (high/medium/low consensus choppings).')
      .requiredOption('--file <tsv>', 'TED consensus output')
      .requiredOption('--mapping <tsv>', 'id mapping (AFDB model id → transcript id)')
      .option('--levels <list>', 'consensus levels to import, comma-separated', 'high,medium')
      .option('--source <name>', 'source name', 'TED consensus'),
  ).action(async (o: Provenance & { file: string; mapping: string; levels: string }) => {
    const levels = o.levels.split(',').map((l) => l.trim()) as TedLevel[];
    if (levels.some((l) => !TED_LEVELS.includes(l))) throw new UsageError(`--levels takes ${TED_LEVELS.join(', ')}`);
    await importNative(o, 'domains', async (db) => mapDomains(await parseTedConsensus(o.file, { levels }), await readIdMapping(o.mapping), releaseProteins(db)), log);
  });

  common(
    imp
      .command('models')
      .description('Predicted structures (AlphaFold DB / ColabFold mmCIF, ModelCIF, PDB; gzipped or not) listed in a mapping file; mapped by the given transcript id or by protein sequence identity.')
      .requiredOption('--mapping <tsv>', 'model list: model_file [transcript_id], paths relative to the list')
      .option('--source <name>', 'model source', 'AlphaFold DB'),
  ).action(async (o: Provenance & { mapping: string }) => {
    await importNative({ ...o, file: o.mapping }, 'structures', async (db) => {
      const { models, warnings } = await readStructureMapping(o.mapping);
      for (const w of warnings) log(`warning: ${w}`);
      return structureRecords(models, releaseProteins(db), o.source);
    }, log);
  });
}
