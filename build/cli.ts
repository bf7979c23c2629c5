// The `isoatlas` command line. Each subcommand is one stage of the one-way flow:
// inputs → import → release DB → build (render) → tree. `demo` runs them all on the bundled chr22 data.
import { Command, CommanderError, InvalidArgumentError } from 'commander';
import { mkdirSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { importCore, loadCoreConfig } from './import/core.js';
import { importTrack } from './import/tracks.js';
import { InputError } from './import/input.js';
import { NamingError } from './import/naming.js';
import { TRACKS, type Track } from './release-db/schema.js';
import { openReleaseDb, updateReleaseDb } from './release-db/store.js';
import { renderTree, type BuildSummary } from './render/index.js';
import { generateDemoTracks } from './generate/demo-tracks.js';

export const EXIT = { ok: 0, failure: 1, usage: 2, badInput: 3 } as const;

const PROJECT_ROOT = resolve(fileURLToPath(new URL('..', import.meta.url)));
export const DEMO = {
  config: join(PROJECT_ROOT, 'data/demo/release.config.json'),
  work: join(PROJECT_ROOT, '.isoatlas/demo'),
  seed: 22,
};

const log = (line: string) => process.stderr.write(`${line}\n`);
function logWarnings(warnings: string[]) {
  for (const w of warnings.slice(0, 5)) log(`warning: ${w}`);
  if (warnings.length > 5) log(`warning: … and ${warnings.length - 5} more`);
}
const mb = (bytes: number) => `${(bytes / 1e6).toFixed(1)} MB`;

function summaryLine(s: BuildSummary, out: string) {
  return `built release ${s.release}: ${s.genes} genes, ${s.isoforms} isoforms, ${s.structures} structures → ${s.files} files, ${mb(s.bytes)} in ${s.seconds.toFixed(1)} s (${out})`;
}

function parseTrack(value: string): Track {
  if (!(TRACKS as readonly string[]).includes(value)) throw new InvalidArgumentError(`expected one of ${TRACKS.join(', ')}`);
  return value as Track;
}

function parseSeed(value: string): number {
  if (!/^\d+$/.test(value)) throw new InvalidArgumentError('expected a non-negative integer');
  return Number(value);
}

const GENERATED_TRACK_FILES: Record<Track, string> = {
  domains: 'domains.tsv',
  neoantigens: 'neoantigens.tsv',
  ptm: 'ptm.tsv',
  structures: 'structures.tsv',
};

/** The whole demo pipeline: real chr22 core → seeded generated tracks → release DB → tree. */
export async function buildDemo(work = DEMO.work, opts: { progress?: boolean; seed?: number } = {}): Promise<{ db: string; tree: string; summary: BuildSummary }> {
  const seed = opts.seed ?? DEMO.seed;
  mkdirSync(work, { recursive: true });
  const db = join(work, 'release.sqlite');
  const tracksDir = join(work, 'generated-tracks');
  const tree = join(work, 'tree');
  const core = await importCore(loadCoreConfig(DEMO.config), db);
  logWarnings(core.warnings);
  log(`imported core: ${core.genes} genes (${core.novelGenes} novel loci), ${core.referenceIsoforms} reference + ${core.longReadIsoforms} long-read isoforms`);

  rmSync(tracksDir, { recursive: true, force: true });
  const reader = openReleaseDb(db);
  const generated = (() => {
    try {
      return generateDemoTracks(reader, tracksDir, { seed });
    } finally {
      reader.close();
    }
  })();
  log(`generated tracks (seed ${seed}): ${generated.domains} domains, ${generated.neoantigens} neoantigens, ${generated.ptm} PTM sites, ${generated.structures} structures`);

  await updateReleaseDb(db, async (handle) => {
    for (const track of TRACKS) {
      await importTrack(handle, {
        track,
        file: join(tracksDir, GENERATED_TRACK_FILES[track]),
        source: 'isoatlas demo generator',
        version: `seed ${seed}`,
        description: 'Generated values tied to the real protein sequences; not predictions of any real tool.',
        generated: true,
      });
    }
  });
  const summary = await renderTree(db, tree, { progress: opts.progress });
  return { db, tree, summary };
}

export function program(): Command {
  const cli = new Command('isoatlas')
    .description('Build and publish a gene and isoform atlas as a static, read-only JSON API (v1).')
    .addHelpText(
      'after',
      `\nExit codes: 0 success, 1 unexpected failure, 2 usage error, 3 invalid input (the message names the file, line and problem).`,
    )
    .showHelpAfterError('(run with --help for usage)')
    // Set before subcommands are added so they inherit it: main() maps errors to exit codes.
    .exitOverride();

  const imp = cli.command('import').description('Import curated inputs into a release database (SQLite).');
  imp
    .command('core')
    .description('Create a release database from reference (GENCODE GTF, SQANTI3 classification, protein FASTA) and long-read inputs named in a release config.')
    .requiredOption('--config <file>', 'release config (JSON); see data/demo/release.config.json and the README')
    .requiredOption('--out <db>', 'release database to write (replaced atomically)')
    .action(async (o: { config: string; out: string }) => {
      const started = performance.now();
      const s = await importCore(loadCoreConfig(o.config), o.out);
      logWarnings(s.warnings);
      log(`imported ${s.genes} genes (${s.novelGenes} novel loci), ${s.referenceIsoforms} reference + ${s.longReadIsoforms} long-read isoforms into ${o.out} in ${((performance.now() - started) / 1000).toFixed(1)} s`);
    });
  imp
    .command('track')
    .description('Add an annotation track from its documented TSV format (see the README) to a release database.')
    .argument('<kind>', `one of ${TRACKS.join(', ')}`, parseTrack)
    .requiredOption('--db <db>', 'release database to update (changed atomically)')
    .requiredOption('--file <tsv>', 'the track TSV')
    .requiredOption('--source <name>', 'what produced the records, e.g. "Pfam 37.0 hmmscan"')
    .option('--version <version>', 'version of the source')
    .option('--description <text>', 'one line on how the records were made')
    .option('--generated', 'the records are generated, not real predictions or measurements', false)
    .action(async (kind: Track, o: { db: string; file: string; source: string; version?: string; description?: string; generated: boolean }) => {
      let n = 0;
      await updateReleaseDb(o.db, async (db) => {
        n = await importTrack(db, { track: kind, file: o.file, source: o.source, version: o.version, description: o.description, generated: o.generated });
      });
      log(`imported ${n} ${kind} records from ${o.file} into ${o.db}`);
    });

  cli
    .command('generate')
    .description('Write seeded, generated annotation tracks (TSV + mmCIF) for the coding isoforms of a release: the demo stand-in for tracks without real input.')
    .requiredOption('--db <db>', 'release database to read proteins from')
    .requiredOption('--out <dir>', 'directory for the TSV files and structures/')
    .option('--seed <n>', 'random seed; the same seed gives byte-identical output', parseSeed, DEMO.seed)
    .action((o: { db: string; out: string; seed: number }) => {
      const db = openReleaseDb(o.db);
      try {
        const r = generateDemoTracks(db, o.out, { seed: o.seed });
        log(`generated ${r.domains} domains, ${r.neoantigens} neoantigens, ${r.ptm} PTM sites, ${r.structures} structures into ${o.out}`);
      } finally {
        db.close();
      }
    });

  cli
    .command('build')
    .description('Render every v1 resource of a release database into a static file tree with manifest.json.')
    .requiredOption('--db <db>', 'release database')
    .requiredOption('--out <dir>', 'output directory (replaced atomically)')
    .action(async (o: { db: string; out: string }) => {
      log(summaryLine(await renderTree(o.db, o.out), o.out));
    });

  cli
    .command('demo')
    .description('Build the demo release (real chr22 data plus generated tracks) into .isoatlas/demo.')
    .option('--work <dir>', 'working directory', DEMO.work)
    .action(async (o: { work: string }) => {
      const { tree, summary } = await buildDemo(resolve(o.work));
      log(summaryLine(summary, tree));
    });

  return cli;
}

export async function main(argv: string[]): Promise<number> {
  const cli = program();
  try {
    await cli.parseAsync(argv);
    return EXIT.ok;
  } catch (err) {
    if (err instanceof CommanderError) {
      return err.code === 'commander.helpDisplayed' || err.code === 'commander.version' || err.exitCode === 0 ? EXIT.ok : EXIT.usage;
    }
    if (err instanceof InputError || err instanceof NamingError) {
      log(`isoatlas: invalid input: ${err.message}`);
      return EXIT.badInput;
    }
    log(`isoatlas: ${(err as Error).message}`);
    if (process.env.ISOATLAS_DEBUG) log((err as Error).stack ?? '');
    return EXIT.failure;
  }
}
