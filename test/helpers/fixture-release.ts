// The suite's fixture release: the demo's own pipeline (build/demo.ts) over the real chr22 inputs cut
// down to the genes test/fixtures/release/genes.json lists, each with the reason it is there. Every
// listed gene keeps all its reference isoforms and every long-read isoform the importer would give
// it, so its records read as in the demo (names, canonical choice, expression, real neoantigens);
// the generated tracks are keyed by transcript id, so they are the demo's too, apart from which
// isoforms get one of the few generated structures.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gunzipSync, gzipSync } from 'node:zlib';
import Database from 'better-sqlite3';
import { buildDemo } from '../../build/demo.js';
import { DEMO } from '../../build/paths.js';
import { geneIdsOf } from '../../build/import/long-read.js';
import type { CoreConfig } from '../../build/import/core.js';
import type { BuildSummary } from '../../build/render/index.js';

const FIXTURE = fileURLToPath(new URL('../fixtures/release/genes.json', import.meta.url));

interface FixtureGenes {
  release: string;
  genes: { gene_id: string; symbol: string; why: string }[];
}

/** How many isoforms get a generated structure: enough to cover the examples the tests ask for, few
 * enough that most coding isoforms have none (as in the demo). */
const STRUCTURE_SAMPLE = 30;

export function fixtureGenes(): FixtureGenes {
  return JSON.parse(readFileSync(FIXTURE, 'utf8')) as FixtureGenes;
}

const unversioned = (id: string) => id.replace(/\.\d+$/, '');
const attribute = (line: string, key: string) => new RegExp(`(?:^|;\\s*)${key} "([^"]+)"`).exec(line)?.[1] ?? null;
const lines = (file: string) => gunzipSync(readFileSync(file)).toString('utf8').split('\n');

function writeLines(file: string, kept: string[]): void {
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, gzipSync(`${kept.join('\n')}\n`, { level: 1 }));
}

/** A TSV's header and the rows whose `column` value `keep` accepts. */
function tsvRows(file: string, column: string, keep: (value: string) => boolean): string[] {
  const [header, ...rows] = lines(file).filter((l) => l !== '');
  const at = header.split('\t').indexOf(column);
  if (at < 0) throw new Error(`${file} has no column ${column}`);
  return [header, ...rows.filter((r) => keep(r.split('\t')[at]))];
}

/** FASTA records whose id (the header's first word) `keep` accepts. */
function fastaRecords(file: string, keep: (id: string) => boolean): string[] {
  const out: string[] = [];
  let keeping = false;
  for (const line of lines(file)) {
    if (line.startsWith('>')) keeping = keep(line.slice(1).split(/\s/)[0]);
    if (keeping && line !== '') out.push(line);
  }
  return out;
}

/** Writes the listed genes' part of every input the demo config names into `dir`, under the same
 * file names, and a release config naming them; returns the config's path. */
export function writeFixtureInputs(dir: string, fixture = fixtureGenes()): string {
  const demo = JSON.parse(readFileSync(DEMO.config, 'utf8')) as CoreConfig;
  const demoDir = dirname(DEMO.config);
  const from = (path: string) => join(demoDir, path);
  const to = (path: string) => join(dir, basename(path));
  const chosen = new Set(fixture.genes.map((g) => g.gene_id));

  // Reference: every transcript of a chosen gene.
  const ref = demo.reference;
  const refGtf = lines(from(ref.gtf)).filter((l) => l !== '');
  const referenceGenes = new Set<string>();
  const keptTranscripts = new Set<string>();
  const refKept = refGtf.filter((l) => {
    if (l.startsWith('#')) return true;
    const gene = attribute(l.split('\t')[8] ?? '', 'gene_id');
    if (!gene) return false;
    referenceGenes.add(unversioned(gene));
    if (!chosen.has(unversioned(gene))) return false;
    const transcript = attribute(l.split('\t')[8], 'transcript_id');
    if (transcript) keptTranscripts.add(transcript);
    return true;
  });
  writeLines(to(ref.gtf), refKept);
  const isKept = (id: string) => keptTranscripts.has(id);
  if (ref.classification) writeLines(to(ref.classification), tsvRows(from(ref.classification), 'isoform', isKept));
  if (ref.fasta) writeLines(to(ref.fasta), fastaRecords(from(ref.fasta), isKept));
  if (ref.gene_pred)
    writeLines(
      to(ref.gene_pred),
      lines(from(ref.gene_pred)).filter((l) => l !== '' && isKept(l.split('\t')[0])),
    );

  // Long reads: each isoform whose gene, as the importer assigns it (the first associated reference
  // gene, else its novel locus), is chosen.
  const long = demo.long_read!;
  const ownerOf = (label: string) => geneIdsOf(label).find((g) => referenceGenes.has(g)) ?? label;
  const classification = tsvRows(from(long.classification), 'associated_gene', (label) => chosen.has(ownerOf(label)));
  const isoformAt = classification[0].split('\t').indexOf('isoform');
  const keptReads = new Set(classification.slice(1).map((r) => r.split('\t')[isoformAt]));
  writeLines(to(long.classification), classification);
  writeLines(
    to(long.gtf),
    lines(from(long.gtf)).filter(
      (l) => l !== '' && keptReads.has(attribute(l.split('\t')[8] ?? '', 'transcript_id') ?? ''),
    ),
  );
  if (long.fasta)
    writeLines(
      to(long.fasta),
      fastaRecords(from(long.fasta), (id) => keptReads.has(id)),
    );

  const rename = <T extends { gtf: string; classification?: string; fasta?: string; gene_pred?: string }>(
    set: T,
  ): T => ({
    ...set,
    gtf: basename(set.gtf),
    ...(set.classification ? { classification: basename(set.classification) } : {}),
    ...(set.fasta ? { fasta: basename(set.fasta) } : {}),
    ...(set.gene_pred ? { gene_pred: basename(set.gene_pred) } : {}),
  });
  const config: CoreConfig = {
    ...demo,
    release: fixture.release,
    title: `isoatlas test fixture: ${fixture.genes.length} genes of the demo release (human chromosome 22)`,
    coverage: `${fixture.genes.length} genes of human chromosome 22 only (GRCh38), chosen for the shapes their records take: other genes, such as TP53 (chr17) or most of chr22, are not in this release.`,
    reference: rename(ref),
    long_read: rename(long),
  };
  const path = join(dir, 'release.config.json');
  writeFileSync(path, `${JSON.stringify(config, null, 2)}\n`);
  return path;
}

/** Builds the fixture release into `work` (inputs/, release.sqlite, tree/), and checks that every
 * listed gene is in it under its listed symbol. */
export async function buildFixtureRelease(work: string): Promise<{ db: string; tree: string; summary: BuildSummary }> {
  const fixture = fixtureGenes();
  const config = writeFixtureInputs(join(work, 'inputs'), fixture);
  const built = await buildDemo(work, { progress: false, config, structureSample: STRUCTURE_SAMPLE });
  const db = new Database(built.db, { readonly: true });
  try {
    const symbolOf = db.prepare('SELECT symbol FROM genes WHERE gene_id = ?').pluck();
    const wrong = fixture.genes.filter((g) => symbolOf.get(g.gene_id) !== g.symbol);
    if (wrong.length)
      throw new Error(
        `${FIXTURE}: not in the fixture release under the listed symbol: ${wrong.map((g) => `${g.gene_id} (${g.symbol})`).join(', ')}`,
      );
  } finally {
    db.close();
  }
  return built;
}
