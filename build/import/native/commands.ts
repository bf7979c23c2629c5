// `isoatlas import pfam|ted|models …`: the annotation tools' native outputs, mapped to the release's
// isoforms and added like any track (validated, one transaction, provenance recorded).
import type { Command } from 'commander';
import { basename } from 'node:path';
import type { Db } from '../../release-db/database.js';
import { insertTrack, type Located, type TrackInput, type TrackRecords } from '../tracks.js';
import type { Track } from '../../release-db/schema.js';
import {
  mapDomains,
  parseDomtblout,
  parseTedChopping,
  parseTedConsensus,
  readIdMapping,
  releaseProteins,
  TED_LEVELS,
  type TedLevel,
} from './domains.js';
import { readStructureMapping, structureRecords } from './structures.js';
import { UsageError } from '../../common/errors.js';
import { nonNegativeNumber } from '../../common/cli-options.js';
import { log } from '../../../edge/server/logger.js';
import {
  describeWildTypeCheck,
  pvacseqOnRelease,
  rankAndMap,
  readMhcflurry,
  readNetmhcpanIedb,
  readPvacseqAggregated,
  readPvacseqAllEpitopes,
  readPvacspliceAllEpitopes,
  releaseResolver,
} from './neoantigens.js';
import { readPtmPose, releaseProteins as ptmProteins, transferPtmSites, PTM_POSE_SOURCE } from './ptm.js';

interface Provenance {
  db: string;
  source: string;
  version?: string;
  description?: string;
  replace?: boolean;
  allowEmpty?: boolean;
}

export const ALLOW_EMPTY_HELP =
  'record the input even when it gives no records (refused otherwise: an empty file is more often a mistake)';

/** Runs `collect` on a copy of the release (for the proteins it needs) and inserts what it returns. */
async function importNative<T extends Track>(
  opts: Provenance & { file: string },
  track: T,
  collect: (db: Db) => Promise<{ located: Located<TrackRecords[T]>[]; unmapped: string[] | number; note?: string }>,
) {
  let summary = '';
  const { updateReleaseDb } = await import('../../release-db/database.js');
  await updateReleaseDb(opts.db, async (db) => {
    const { located, unmapped, note } = await collect(db);
    const input: TrackInput = {
      track,
      file: opts.file,
      source: opts.source,
      version: opts.version,
      description: opts.description,
      generated: false,
      replace: opts.replace,
      allowEmpty: opts.allowEmpty,
    };
    const n = await insertTrack(db, input, located);
    const missing =
      typeof unmapped === 'number'
        ? `${unmapped} records matched no isoform`
        : `${unmapped.length} ids matched no isoform${unmapped.length ? ` (e.g. ${unmapped.slice(0, 3).join(', ')})` : ''}`;
    summary = `imported ${n} ${track} records from ${basename(opts.file)} into ${opts.db}${note ? ` (${note})` : ''}; ${missing}`;
  });
  log.info(summary);
}

const common = (c: Command) =>
  c
    .requiredOption('--db <db>', 'release database to update (changed atomically)')
    .option('--version <version>', 'version of the tool or database')
    .option('--description <text>', 'one line on how the records were made')
    .option(
      '--replace',
      'replace the records an earlier import of a file of the same name added (a corrected file)',
      false,
    )
    .option('--allow-empty', ALLOW_EMPTY_HELP, false);

export function addNativeImportCommands(imp: Command): void {
  common(
    imp
      .command('pfam')
      .description(
        'Pfam domains from HMMER --domtblout (hmmscan or hmmsearch), filtered by per-domain i-Evalue, envelope coordinates.',
      )
      .requiredOption('--file <domtblout>', 'HMMER --domtblout output')
      .option('--mapping <tsv>', 'id mapping (query id → transcript id), when query ids are not transcript ids')
      .option('--max-ievalue <x>', 'keep domains with i-Evalue at most this', nonNegativeNumber, 1e-5)
      .option('--source <name>', 'source name', 'Pfam (HMMER domtblout)'),
  ).action(async (o: Provenance & { file: string; mapping?: string; maxIevalue: number }) => {
    await importNative(o, 'domains', async (db) => {
      const parsed = await parseDomtblout(o.file, { maxIEvalue: o.maxIevalue });
      const mapped = mapDomains(
        parsed.rows,
        o.mapping ? await readIdMapping(o.mapping) : new Map(),
        releaseProteins(db),
      );
      return { ...mapped, note: `${parsed.total} hits, ${parsed.filtered} above the i-Evalue cut-off ${o.maxIevalue}` };
    });
  });

  common(
    imp
      .command('ted')
      .description('TED domains from a TED consensus file (high/medium/low consensus choppings).')
      .requiredOption('--file <tsv>', 'TED consensus output')
      .requiredOption('--mapping <tsv>', 'id mapping (AFDB model id → transcript id)')
      .option('--levels <list>', 'consensus levels to import, comma-separated', 'high,medium')
      .option(
        '--method <name>',
        "the file is one method's chopping file (chainsaw, merizo, unidoc) instead of the consensus",
      )
      .option('--source <name>', 'source name', 'TED consensus'),
  ).action(async (o: Provenance & { file: string; mapping: string; levels: string; method?: string }) => {
    const levels = o.levels.split(',').map((l) => l.trim()) as TedLevel[];
    if (levels.some((l) => !TED_LEVELS.includes(l))) throw new UsageError(`--levels takes ${TED_LEVELS.join(', ')}`);
    await importNative(o, 'domains', async (db) => {
      const hits = o.method ? await parseTedChopping(o.file, o.method) : await parseTedConsensus(o.file, { levels });
      return mapDomains(hits, await readIdMapping(o.mapping), releaseProteins(db));
    });
  });

  common(
    imp
      .command('models')
      .description(
        'Predicted structures (AlphaFold DB / ColabFold mmCIF, ModelCIF, PDB; gzipped or not) listed in a mapping file; mapped by the given transcript id or by protein sequence identity.',
      )
      .requiredOption('--mapping <tsv>', 'model list: model_file [transcript_id], paths relative to the list')
      .option('--source <name>', 'model source', 'AlphaFold DB'),
  ).action(async (o: Provenance & { mapping: string }) => {
    await importNative({ ...o, file: o.mapping }, 'structures', async (db) => {
      const { models, warnings } = await readStructureMapping(o.mapping);
      for (const w of warnings) log.warn(w);
      return structureRecords(models, releaseProteins(db), o.source);
    });
  });

  const PVAC_FORMATS = {
    'all-epitopes': readPvacseqAllEpitopes,
    aggregated: readPvacseqAggregated,
    pvacsplice: readPvacspliceAllEpitopes,
  } as const;
  common(
    imp
      .command('pvacseq')
      .description('Neoantigens from pVACseq / pVACsplice results, mapped by transcript id (versioned or not).')
      .requiredOption('--file <tsv>', 'all_epitopes.tsv, aggregated.tsv or a pVACsplice all_epitopes.tsv')
      .option('--format <format>', `one of ${Object.keys(PVAC_FORMATS).join(', ')}`, 'all-epitopes')
      .option('--source <name>', 'source name', 'pVACseq'),
  ).action(async (o: Provenance & { file: string; format: string }) => {
    const read = PVAC_FORMATS[o.format as keyof typeof PVAC_FORMATS];
    if (!read) throw new UsageError(`--format takes ${Object.keys(PVAC_FORMATS).join(', ')}`);
    await importNative(o, 'neoantigens', async (db) => {
      const parsed = await read(o.file);
      for (const w of parsed.warnings) log.warn(w);
      const note = `${parsed.skipped} rows without a computable position skipped`;
      // pVACsplice epitopes lie on the altered protein, with no wild-type epitope to check.
      if (o.format === 'pvacsplice') {
        const isoforms = db.prepare('SELECT transcript_id, transcript_id_unversioned FROM isoforms').all() as {
          transcript_id: string;
          transcript_id_unversioned: string | null;
        }[];
        return { ...rankAndMap(parsed.rows, releaseResolver(isoforms)), note };
      }
      const placed = pvacseqOnRelease(db, parsed.rows);
      return {
        located: placed.located,
        unmapped: placed.unmapped,
        note: `${note}; ${describeWildTypeCheck(placed.check)}`,
      };
    });
  });

  common(
    imp
      .command('ptm-pose')
      .description(
        'PTM sites from a PTM-POSE site table: canonical-isoform positions checked, then carried to other isoforms by their ±7 residue window.',
      )
      .requiredOption('--file <csv>', 'PTM-POSE table (CSV)')
      .option('--source <name>', 'source name', PTM_POSE_SOURCE),
  ).action(async (o: Provenance & { file: string }) => {
    await importNative(o, 'ptm', async (db) => {
      const { sites } = await readPtmPose(o.file);
      const proteins = ptmProteins(db);
      const { located, skipped } = transferPtmSites(sites, proteins.canonical, proteins.isoforms);
      const note = Object.entries(skipped)
        .filter(([, n]) => n)
        .map(([why, n]) => `${n} ${why.replace(/_/g, ' ')}`)
        .join(', ');
      return { located, unmapped: [], note: note ? `skipped: ${note}` : undefined };
    });
  });

  for (const [name, read, what] of [
    ['mhcflurry', readMhcflurry, 'MHCflurry predictions (pVACtools wrapper layout)'],
    ['netmhcpan', readNetmhcpanIedb, 'NetMHCpan predictions in the IEDB tabular layout'],
  ] as const) {
    common(
      imp
        .command(name)
        .description(
          `Neoantigens from ${what}; their seq_num names the input sequence, mapped to a transcript by --mapping.`,
        )
        .requiredOption('--file <tsv>', 'prediction table')
        .requiredOption('--mapping <tsv>', 'id mapping: seq_num → transcript id')
        .option('--source <name>', 'source name', name === 'mhcflurry' ? 'MHCflurry' : 'NetMHCpan'),
    ).action(async (o: Provenance & { file: string; mapping: string }) => {
      const bySeq = await readIdMapping(o.mapping);
      await importNative(o, 'neoantigens', async (db) => {
        const parsed = await read(o.file, (seqNum) => bySeq.get(seqNum) ?? null);
        for (const w of parsed.warnings) log.warn(w);
        const isoforms = db.prepare('SELECT transcript_id, transcript_id_unversioned FROM isoforms').all() as {
          transcript_id: string;
          transcript_id_unversioned: string | null;
        }[];
        return {
          ...rankAndMap(parsed.rows, releaseResolver(isoforms)),
          note: `${parsed.skipped} rows with no mapped seq_num skipped`,
        };
      });
    });
  }
}
