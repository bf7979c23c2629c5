// A release built from a GENCODE GTF alone (the shipped v49 subset, `isoatlas import core` then
// `isoatlas build`, as a user runs them): every served ORF and reference CDS against the GTF's own
// lines, read here with plain splits and regular expressions rather than the importer, and the counts
// data/README.md states against the build.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { runCli } from './helpers/run.js';

const V49 = join(__dirname, '../data/gencode-v49/gencode.v49.tusco_subset.gtf.gz');
const CONFIG = join(__dirname, 'fixtures/v49.config.json');
const README = join(__dirname, '../data/README.md');

/** One transcript as its GTF lines give it. */
interface Lines {
  strand: string;
  tags: string[];
  cds: { start: number; end: number; phase: number }[];
  /** Nucleotides the start_codon and stop_codon lines cover. */
  startCodon: number;
  stopCodon: number;
}

function gtfLines(): Map<string, Lines> {
  const out = new Map<string, Lines>();
  for (const line of gunzipSync(readFileSync(V49)).toString('utf8').split('\n')) {
    const f = line.split('\t');
    if (f.length !== 9) continue;
    const id = /transcript_id "([^"]+)"/.exec(f[8])?.[1];
    if (!id) continue;
    if (f[2] === 'transcript') {
      const tags = [...f[8].matchAll(/tag "([^"]+)"/g)].map((m) => m[1]);
      out.set(id, { strand: f[6], tags, cds: [], startCodon: 0, stopCodon: 0 });
      continue;
    }
    const t = out.get(id)!;
    const length = Number(f[4]) - Number(f[3]) + 1;
    if (f[2] === 'CDS') t.cds.push({ start: Number(f[3]), end: Number(f[4]), phase: Number(f[7]) });
    else if (f[2] === 'start_codon') t.startCodon += length;
    else if (f[2] === 'stop_codon') t.stopCodon += length;
  }
  return out;
}

/** An end by GENCODE's definitions: the _NF tag says not found; else the codon's lines, all 3 nt. */
const endStatus = (t: Lines, tag: string, codon: number) =>
  t.tags.includes(tag) ? 'incomplete' : codon === 3 ? 'complete' : 'unknown';

function expectedCompleteness(t: Lines): string {
  const start = endStatus(t, 'cds_start_NF', t.startCodon) === 'complete';
  const stop = endStatus(t, 'cds_end_NF', t.stopCodon) === 'complete';
  return start && stop ? 'complete' : stop ? '5prime_partial' : start ? '3prime_partial' : 'internal';
}

/** The whole codons of the CDS lines, from the phase of the 5′-most one. */
function wholeCodons(t: Lines): number {
  const nt = t.cds.reduce((sum, c) => sum + c.end - c.start + 1, 0);
  const first = t.cds.reduce((a, b) => (t.strand === '+' ? (b.start < a.start ? b : a) : b.end > a.end ? b : a));
  return Math.floor((nt - first.phase) / 3);
}

interface Served {
  transcript_id: string;
  transcript_name: string;
  coding: boolean | null;
  protein_length: number | null;
  canonical: boolean;
  orf: { completeness: string; source: string } | null;
  reference_cds: { start_status: string; end_status: string } | null;
}

describe('a release built from the GENCODE v49 subset GTF alone', () => {
  let dir: string;
  let records: Served[];
  const gtf = gtfLines();

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'isoatlas-gtf-only-'));
    const db = join(dir, 'release.sqlite');
    const tree = join(dir, 'tree');
    for (const args of [
      ['import', 'core', '--config', CONFIG, '--out', db],
      ['build', '--db', db, '--out', tree],
    ]) {
      const ran = await runCli(args);
      expect(ran.status, `isoatlas ${args.join(' ')}\n${ran.stderr}`).toBe(0);
    }
    const isoforms = join(tree, 'api/v1/isoforms');
    records = readdirSync(isoforms)
      .filter((f) => f.endsWith('.json'))
      .map((f) => JSON.parse(readFileSync(join(isoforms, f), 'utf8')) as Served);
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('serves every isoform of the GTF', () => {
    expect(records.map((r) => r.transcript_id).sort()).toEqual([...gtf.keys()].sort());
  });

  it('claims a start or a stop only where the GTF annotates the codon and no _NF tag denies it', () => {
    const withOrf = records.filter((r) => r.orf);
    expect(withOrf.length).toBeGreaterThan(0);
    expect(withOrf.every((r) => r.orf!.source === 'gtf')).toBe(true);
    const wrong = withOrf
      .filter((r) => r.orf!.completeness !== expectedCompleteness(gtf.get(r.transcript_id)!))
      .map((r) => `${r.transcript_name} ${r.orf!.completeness}`);
    expect(wrong).toEqual([]);
    // The figures, directly: no complete ORF without a start codon, no stop without its codon.
    const noStart = withOrf.filter(
      (r) => r.orf!.completeness === 'complete' && gtf.get(r.transcript_id)!.startCodon < 3,
    );
    expect(noStart).toEqual([]);
    const stopClaimed = withOrf.filter((r) => ['complete', '5prime_partial'].includes(r.orf!.completeness));
    expect(stopClaimed.filter((r) => gtf.get(r.transcript_id)!.stopCodon < 3)).toEqual([]);
    // AARS1-201, MANE Select: the subset keeps 727 nt of its CDS and its stop codon, not its start.
    const aars1 = records.find((r) => r.transcript_id === 'ENST00000261772.13')!;
    expect(aars1).toMatchObject({ canonical: true, orf: { completeness: '5prime_partial' } });
  });

  it('serves reference_cds exactly for transcripts with CDS lines, its ends by the same rule', () => {
    const wrong = records.flatMap((r) => {
      const t = gtf.get(r.transcript_id)!;
      const expected = t.cds.length
        ? {
            start_status: endStatus(t, 'cds_start_NF', t.startCodon),
            end_status: endStatus(t, 'cds_end_NF', t.stopCodon),
          }
        : null;
      const got = r.reference_cds && {
        start_status: r.reference_cds.start_status,
        end_status: r.reference_cds.end_status,
      };
      return JSON.stringify(got) === JSON.stringify(expected) ? [] : [`${r.transcript_name}: ${JSON.stringify(got)}`];
    });
    expect(wrong).toEqual([]);
    // MAZ-213: 1 nt of a stop codon and no CDS line is neither coding nor a CDS.
    const maz = records.find((r) => r.transcript_id === 'ENST00000568411.5')!;
    expect(gtf.get(maz.transcript_id)).toMatchObject({ cds: [], stopCodon: 1 });
    expect(maz).toMatchObject({ coding: false, orf: null, reference_cds: null });
  });

  it('counts whole codons from the phase of the 5′-most CDS line', () => {
    const coding = records.filter((r) => r.coding);
    expect(coding.length).toBeGreaterThan(0);
    const wrong = coding
      .filter((r) => r.protein_length !== wholeCodons(gtf.get(r.transcript_id)!))
      .map((r) => `${r.transcript_name} ${r.protein_length}`);
    expect(wrong).toEqual([]);
    expect(records.find((r) => r.transcript_id === 'ENST00000261772.13')!.protein_length).toBe(242);
  });

  it('has the counts data/README.md states', () => {
    const readme = readFileSync(README, 'utf8').replace(/\s+/g, ' ');
    const n = (pred: (r: Served) => boolean) => records.filter(pred).length;
    const status = (s: string) => n((r) => r.orf?.completeness === s);
    const genes = new Set(readdirSync(join(dir, 'tree/api/v1/genes')).filter((f) => f.endsWith('.json'))).size;
    expect(readme).toContain(
      `has ${genes} genes and ${records.length} isoforms; ${n((r) => r.coding === true)} are coding, each with an ORF (${n((r) => r.orf !== null)}) and a \`reference_cds\` (${n((r) => r.reference_cds !== null)}) from the GTF's CDS lines: ${status('complete')} \`complete\`, ${status('5prime_partial')} \`5prime_partial\`, ${status('3prime_partial')} \`3prime_partial\` and ${status('internal')} \`internal\`.`,
    );
    expect(readme).toContain(
      `the start codon of ${n((r) => r.reference_cds?.start_status === 'unknown')} of them and the stop codon of ${n((r) => r.reference_cds?.end_status === 'unknown')}`,
    );
    const aars1 = gtf.get('ENST00000261772.13')!;
    const nt = aars1.cds.reduce((sum, c) => sum + c.end - c.start + 1, 0);
    const phase = aars1.cds.reduce((a, b) => (b.end > a.end ? b : a)).phase; // minus strand: 5′-most is rightmost
    expect(readme).toContain(
      `keeps ${nt} nt of its CDS in ${aars1.cds.length} exons (its 5′-most CDS line has phase ${phase}: one base of a codon, then ${wholeCodons(aars1)} whole codons)`,
    );
  });
});
