// The `isoatlas` command line. Each subcommand is one stage of the one-way flow:
// inputs → import → release DB → build (render) → tree. `demo` runs them all on the bundled chr22 data.
import { Command, Help, InvalidArgumentError, type Option } from 'commander';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { TRACKS, type Track } from './release-db/schema.js';
import { addKeysCommand } from './keys/commands.js';
import { UsageError } from './common/errors.js';
import { DEMO, PROJECT_ROOT } from './paths.js';
import { addPublishCommands } from './publish/commands.js';
import { ALLOW_EMPTY_HELP, addNativeImportCommands } from './import/native/commands.js';
import {
  DEFAULT_PORT,
  addLogOptions,
  parseBaseUrl,
  parsePort,
  positiveInteger,
  runProgram,
} from './common/cli-options.js';
import { infoLine, log } from '../edge/server/logger.js';
import { addServeCommands } from '../edge/server/commands.js';
import { readAccessConfigFile } from './common/access-config-file.js';
import type { BuildSummary } from './render/index.js';
import { HUMAN_GENES_DEFAULT, HUMAN_STAGES, type HumanStage } from './generate/human-stages.js';

// Commands import what they need when they run: `isoatlas --help` loads no AWS SDK, SQLite or
// search library.
export { EXIT } from './common/cli-options.js';

const HUMAN_WORK = join(PROJECT_ROOT, '.isoatlas/human');
const DEFAULT_KEYS_DIR = process.env.ISOATLAS_KEYS_DIR ?? join(PROJECT_ROOT, '.isoatlas/keys');

const mb = (bytes: number) => `${(bytes / 1e6).toFixed(1)} MB`;

function summaryLine(s: BuildSummary, out: string) {
  const cleared = s.interrupted.length
    ? `; removed what ${s.interrupted.length} killed build(s) of it left (process ${s.interrupted.join(', ')})`
    : '';
  return `built release ${s.release}: ${s.genes} genes, ${s.isoforms} isoforms, ${s.structures} structures → ${s.files} files, ${mb(s.bytes)} in ${s.seconds.toFixed(1)} s (${out})${cleared}`;
}

function parseTrack(value: string): Track {
  if (!(TRACKS as readonly string[]).includes(value))
    throw new InvalidArgumentError(`expected one of ${TRACKS.join(', ')}`);
  return value as Track;
}

function parseScale(value: string): 'demo' | 'human' {
  if (value !== 'demo' && value !== 'human') throw new InvalidArgumentError('expected demo or human');
  return value;
}

function parseSeed(value: string): number {
  if (!/^\d+$/.test(value)) throw new InvalidArgumentError('expected a non-negative integer');
  return Number(value);
}

function packageVersion(): string {
  return (JSON.parse(readFileSync(join(PROJECT_ROOT, 'package.json'), 'utf8')) as { version: string }).version;
}

/** An option's help text: its description, then (required), its choices and its default. */
function describeOption(option: Option): string {
  const extra = new Help().optionDescription(option);
  return option.mandatory ? extra.replace(option.description, `${option.description} (required)`) : extra;
}

export function program(): Command {
  const cli = new Command('isoatlas')
    .description('Build and publish a gene and isoform atlas as a static, read-only JSON API (v1).')
    .addHelpText(
      'after',
      `\nExit codes: 0 success, 1 unexpected failure, 2 usage error, 3 invalid input (the message names the file, line and problem), 4 storage unreachable or refusing.`,
    )
    .version(packageVersion(), '-V, --version', 'print the version of isoatlas')
    // Options of the program are read before a subcommand only: `import track --version <v>` is the
    // track's version, not this one.
    .enablePositionalOptions()
    // Required options say so in every command's help (inherited by the subcommands added below).
    .configureHelp({ optionDescription: (option) => describeOption(option) })
    .showHelpAfterError('(run with --help for usage)')
    // Set before subcommands are added so they inherit it: main() maps errors to exit codes.
    .exitOverride();

  const imp = cli.command('import').description('Import curated inputs into a release database (SQLite).');
  imp
    .command('core')
    .description(
      'Create a release database from reference (GENCODE GTF, SQANTI3 classification, protein FASTA) and long-read inputs named in a release config.',
    )
    .requiredOption('--config <file>', 'release config (JSON); see data/demo/release.config.json and the README')
    .requiredOption('--out <db>', 'release database to write (replaced atomically)')
    .action(async (o: { config: string; out: string }) => {
      const started = performance.now();
      const { importCore, loadCoreConfig } = await import('./import/core.js');
      const { logWarnings } = await import('./demo.js');
      const s = await importCore(loadCoreConfig(o.config), o.out);
      logWarnings(s.warnings);
      log.info(
        `imported ${s.genes} genes (${s.novelGenes} novel loci), ${s.referenceIsoforms} reference + ${s.longReadIsoforms} long-read isoforms into ${o.out} in ${((performance.now() - started) / 1000).toFixed(1)} s`,
      );
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
    .option(
      '--replace',
      'replace the records an earlier import of a file of the same name added (a corrected file)',
      false,
    )
    .option('--allow-empty', ALLOW_EMPTY_HELP, false)
    .action(
      async (
        kind: Track,
        o: {
          db: string;
          file: string;
          source: string;
          version?: string;
          description?: string;
          generated: boolean;
          replace: boolean;
          allowEmpty: boolean;
        },
      ) => {
        let n = 0;
        const { updateReleaseDb } = await import('./release-db/database.js');
        const { importTrack } = await import('./import/tracks.js');
        await updateReleaseDb(o.db, async (db) => {
          n = await importTrack(db, {
            track: kind,
            file: o.file,
            source: o.source,
            version: o.version,
            description: o.description,
            generated: o.generated,
            replace: o.replace,
            allowEmpty: o.allowEmpty,
          });
        });
        log.info(
          `imported ${n} ${kind} records from ${o.file} into ${o.db}${o.replace ? ' (replacing the earlier import of that file)' : ''}`,
        );
      },
    );

  cli
    .command('remove-track')
    .description(
      "Remove an annotation track's records from a release database: those one input added (--input), or the whole track; the metrics follow.",
    )
    .argument('<kind>', `one of ${TRACKS.join(', ')}`, parseTrack)
    .requiredOption('--db <db>', 'release database to update (changed atomically)')
    .option(
      '--input <file name>',
      'only what this input added (its file name, as `isoatlas` lists it in release.json sources)',
    )
    .action(async (kind: Track, o: { db: string; input?: string }) => {
      const { updateReleaseDb } = await import('./release-db/database.js');
      const { removeTrackRecords } = await import('./import/tracks.js');
      let line = '';
      await updateReleaseDb(o.db, async (db) => {
        const r = removeTrackRecords(db, kind, o.input);
        if (r.inputs.length === 0) {
          const had = db
            .prepare('SELECT input_file FROM track_sources WHERE track = ? ORDER BY input_file')
            .pluck()
            .all(kind) as string[];
          throw new UsageError(
            o.input
              ? `the ${kind} track of ${o.db} has no input named ${o.input}; its inputs: ${had.join(', ') || 'none'}`
              : `${o.db} has no ${kind} track to remove`,
          );
        }
        line = `removed ${r.records} ${kind} records (${r.inputs.join(', ')}) from ${o.db}`;
      });
      log.info(line);
    });

  imp
    .command('gene-info')
    .description(
      "Gene full names, synonyms, types and cross-references (NCBI Gene, HGNC, UniProt), from isoatlas's gene-info TSV or HGNC's complete set; replaces any the release had.",
    )
    .requiredOption('--db <db>', 'release database to update (changed atomically)')
    .requiredOption('--file <tsv>', 'gene-info TSV (data/README.md) or hgnc_complete_set.txt')
    .requiredOption('--source <name>', 'where the file comes from, e.g. "HGNC complete set"')
    .option('--version <version>', 'version or date of the source')
    .option('--description <text>', 'one line on how the file was made')
    .option('--allow-empty', ALLOW_EMPTY_HELP, false)
    .action(
      async (o: {
        db: string;
        file: string;
        source: string;
        version?: string;
        description?: string;
        allowEmpty: boolean;
      }) => {
        const { updateReleaseDb } = await import('./release-db/database.js');
        const { importGeneInfo } = await import('./import/gene-info.js');
        let line = '';
        await updateReleaseDb(o.db, async (db) => {
          const s = await importGeneInfo(db, o);
          line = `imported gene info (${s.format} format) for ${s.genes} genes from ${o.file} into ${o.db}; ${s.unmatched} rows name no gene of the release${s.ambiguous.length ? `; ${s.ambiguous.length} genes named by several rows left without (e.g. ${s.ambiguous.slice(0, 3).join(', ')})` : ''}${
            s.refused.length
              ? `; ${s.refused.length} rows refused for contradicting the annotation (e.g. ${s.refused
                  .slice(0, 3)
                  .map((r) => `${r.gene_id} ${r.symbol}: ${r.reason}`)
                  .join(', ')})`
              : ''
          }`;
        });
        log.info(line);
      },
    );

  addNativeImportCommands(imp);

  cli
    .command('generate')
    .description(
      'Write seeded, generated inputs. --scale demo (the default): annotation tracks (TSV + mmCIF) for the coding isoforms of a release (--db), the demo stand-in for tracks without real input. --scale human: a whole synthetic human-scale input set (GTF, SQANTI3 classifications, protein FASTA, release config, track TSVs) for `import core` and `import track`.',
    )
    .option('--scale <scale>', 'demo or human', parseScale, 'demo')
    .option('--db <db>', 'release database to read proteins from (--scale demo)')
    .requiredOption(
      '--out <dir>',
      'directory to write (--scale demo: TSV files and structures/; --scale human: replaced)',
    )
    .option('--seed <n>', 'random seed; the same seed gives byte-identical output', parseSeed, DEMO.seed)
    .option(
      '--genes <n>',
      `genes to generate with --scale human (default ${HUMAN_GENES_DEFAULT.toLocaleString('en-US')}; isoforms and tracks scale with it)`,
      positiveInteger,
    )
    .action(async (o: { scale: 'demo' | 'human'; db?: string; out: string; seed: number; genes?: number }) => {
      if (o.scale === 'human') {
        if (o.db) throw new UsageError('--db is for --scale demo; --scale human generates its own release');
        const { generateHumanInputs } = await import('./generate/human.js');
        const s = generateHumanInputs(resolve(o.out), { seed: o.seed, genes: o.genes });
        log.info(
          `generated a synthetic human-scale input set (seed ${o.seed}): ${s.genes} genes, ${s.referenceIsoforms + s.longReadIsoforms} isoforms (${s.longReadIsoforms} long-read), ${s.domains} domains, ${s.neoantigens} neoantigens, ${s.ptm} PTM sites, ${s.structures} structures → ${s.files} files, ${mb(s.bytes)} in ${o.out} (config ${s.config})`,
        );
        return;
      }
      if (!o.db)
        throw new UsageError('generate --scale demo needs --db <db>: the release whose proteins the tracks annotate');
      if (o.genes !== undefined) throw new UsageError('--genes is for --scale human');
      const { openReleaseDb } = await import('./release-db/database.js');
      const { generateDemoTracks } = await import('./generate/demo-tracks.js');
      const db = openReleaseDb(o.db);
      try {
        const r = generateDemoTracks(db, o.out, { seed: o.seed });
        log.info(
          `generated ${r.domains} domains, ${r.neoantigens} neoantigens, ${r.ptm} PTM sites, ${r.structures} structures into ${o.out}`,
        );
      } finally {
        db.close();
      }
    });

  cli
    .command('build')
    .description('Render every v1 resource of a release database into a static file tree with manifest.json.')
    .requiredOption('--db <db>', 'release database')
    .requiredOption(
      '--out <dir>',
      'output directory: new or empty, or (with --force) a tree an earlier build rendered; replaced atomically',
    )
    .option(
      '--force',
      'replace the tree an earlier build rendered in --out (never a directory holding other files)',
      false,
    )
    .action(async (o: { db: string; out: string; force: boolean }) => {
      const { renderTree } = await import('./render/index.js');
      log.info(summaryLine(await renderTree(o.db, o.out, { replace: o.force }), o.out));
    });

  cli
    .command('demo')
    .description(
      'Build the demo release (real chr22 data plus generated tracks) into .isoatlas/demo; with --scale human, generate, import and build a synthetic human-scale release into .isoatlas/human, one process per stage, reporting seconds, files, bytes and peak RSS of each.',
    )
    .option(
      '--scale <scale>',
      'demo (real chr22 data) or human (synthetic, 62,000 genes and 250,000 isoforms)',
      parseScale,
      'demo',
    )
    .option('--work <dir>', `working directory (default ${DEMO.work} or, with --scale human, ${HUMAN_WORK})`)
    .option('--seed <n>', 'random seed of the generated data', parseSeed)
    .option('--genes <n>', 'genes to generate with --scale human (default 62,000)', positiveInteger)
    .option('--json', 'with --scale human, also print the figures as one JSON object on stdout', false)
    .action(async (o: { scale: 'demo' | 'human'; work?: string; seed?: number; genes?: number; json: boolean }) => {
      if (o.scale === 'demo') {
        if (o.genes !== undefined || o.json) throw new UsageError('--genes and --json are for --scale human');
        const { buildDemo } = await import('./demo.js');
        const { tree, summary } = await buildDemo(resolve(o.work ?? DEMO.work), { seed: o.seed });
        log.info(summaryLine(summary, tree));
        return;
      }
      const { runHumanPipeline, summaryLine: humanSummaryLine } = await import('./generate/human-pipeline.js');
      const report = await runHumanPipeline(
        { work: resolve(o.work ?? HUMAN_WORK), seed: o.seed ?? DEMO.seed, genes: o.genes },
        infoLine,
      );
      log.info(humanSummaryLine(report));
      if (o.json) process.stdout.write(`${JSON.stringify(report)}\n`);
    });

  // One stage of `demo --scale human` in its own process; prints its figures as a JSON line.
  cli
    .command('demo-stage', { hidden: true })
    .argument('<stage>', HUMAN_STAGES.join(', '), (v: string) => {
      if (!(HUMAN_STAGES as readonly string[]).includes(v))
        throw new InvalidArgumentError(`expected one of ${HUMAN_STAGES.join(', ')}`);
      return v as HumanStage;
    })
    .requiredOption('--work <dir>', 'working directory')
    .option('--seed <n>', 'random seed', parseSeed, DEMO.seed)
    .option('--genes <n>', 'genes to generate', positiveInteger)
    .action(async (stage: HumanStage, o: { work: string; seed: number; genes?: number }) => {
      const { runHumanStage } = await import('./generate/human-pipeline.js');
      const figures = await runHumanStage(stage, { work: resolve(o.work), seed: o.seed, genes: o.genes });
      process.stdout.write(`${JSON.stringify(figures)}\n`);
    });

  cli
    .command('start')
    .description('Build the demo release if it has not been built, then serve it (what `npm start` runs).')
    .option('--port <n>', 'port; default $PORT or 8080', parsePort, parsePort(DEFAULT_PORT))
    .option('--host <address>', 'address to listen on', '127.0.0.1')
    .option('--rebuild', 'build the demo release again even if it exists', false)
    .action(async (o: { port: number; host: string; rebuild: boolean }) => {
      const tree = join(DEMO.work, 'tree');
      const { serve, treeIsCurrent } = await import('../edge/server/serve.js');
      if (o.rebuild || !treeIsCurrent(tree)) {
        const { buildDemo } = await import('./demo.js');
        const built = await buildDemo();
        log.info(summaryLine(built.summary, built.tree));
      } else log.info(`using the demo release already built in ${tree} (rebuild with \`npm start -- --rebuild\`)`);
      await serve({
        dir: tree,
        port: o.port,
        host: o.host,
        access: readAccessConfigFile(undefined, 'open'),
        keysDir: DEFAULT_KEYS_DIR,
      });
    });

  cli
    .command('bundle-edge')
    .description(
      'Bundle the Lambda@Edge origin-request function with esbuild and print its size (API keys are checked by the key gate, not by it).',
    )
    .option('--out <dir>', 'output directory', join(PROJECT_ROOT, 'dist/edge'))
    .option('--origin <url>', 'base URL of the tree the function reads', parseBaseUrl)
    .option('--published', 'the base URL holds a published bucket layout (current.json and releases/)', false)
    .option('--bucket <name>', 'read a published bucket with the S3 API instead (the CDN deployment)')
    .option('--bucket-region <region>', 'region of that bucket', process.env.AWS_REGION ?? 'us-east-1')
    .option('--prefix <prefix>', 'key prefix of the published atlas in the bucket', '')
    .option('--structure-base <url>', 'base URL structure redirects point into', parseBaseUrl)
    .action(
      async (o: {
        out: string;
        origin?: string;
        published: boolean;
        bucket?: string;
        bucketRegion: string;
        prefix: string;
        structureBase?: string;
      }) => {
        if (!o.origin === !o.bucket) throw new UsageError('name exactly one origin: --origin <url> or --bucket <name>');
        const { bundleEdge } = await import('./bundle/edge.js');
        const b = await bundleEdge({
          outDir: o.out,
          originBaseUrl: o.origin,
          published: o.published,
          s3: o.bucket ? { bucket: o.bucket, region: o.bucketRegion, prefix: o.prefix } : undefined,
          structureBaseUrl: o.structureBase,
        });
        log.info(
          `edge bundle ${b.file}: ${(b.bytes / 1024).toFixed(1)} KiB (${(b.gzipBytes / 1024).toFixed(1)} KiB gzipped)`,
        );
      },
    );

  cli
    .command('bundle-server')
    .description(
      'Write `serve`, `mirror` and `nginx-config` as one file (isoatlas-server.mjs) that runs on Node >= 20 with no npm install: what a mirror operator downloads.',
    )
    .option('--out <file>', 'the file to write', 'dist/isoatlas-server.mjs')
    .action(async (o: { out: string }) => {
      const { bundleServer } = await import('./bundle/server.js');
      const b = await bundleServer({ out: o.out });
      log.info(
        `server bundle ${b.file}: ${(b.bytes / 1e6).toFixed(2)} MB (${(b.gzipBytes / 1e6).toFixed(2)} MB gzipped); run it with \`node ${o.out} serve --dir <tree or mirror>\``,
      );
    });

  addPublishCommands(cli, infoLine);
  addServeCommands(cli, { defaultDir: join(DEMO.work, 'tree'), keysDir: DEFAULT_KEYS_DIR });

  addKeysCommand(cli, DEFAULT_KEYS_DIR);
  addLogOptions(cli);

  return cli;
}

export async function main(argv: string[]): Promise<number> {
  return runProgram(program(), argv);
}
