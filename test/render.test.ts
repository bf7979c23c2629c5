// The rendered tree of the demo release: every body against its schema, the manifest against the
// files, every isoform reachable through the alias maps, pages, structures, search index, determinism.
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import fg from 'fast-glob';
import MiniSearch from 'minisearch';
import { createHash } from 'node:crypto';
import Database from 'better-sqlite3';
import { copyFileSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { importCore, loadCoreConfig } from '../build/import/core.js';
import { renderTree } from '../build/render/index.js';
import { contentTypeOf, treePaths } from '../edge/contract/tree.js';
import { SEARCH_FIELDS, typoIndexOptions, typoKeys, type TermShardBody } from '../edge/contract/search.js';
import { listSize, routes } from '../edge/contract/routes.js';

const routeOf = (id: string) => routes.find((r) => r.id === id)!;
const ISOFORM_PAGE_SIZE = listSize(routeOf('geneIsoforms'));
const NEOANTIGEN_TOP = listSize(routeOf('neoantigens'));
import { schemaForTreePath, validate } from './helpers/schemas.js';
import type {
  GeneBody,
  IsoformBody,
  IsoformPageBody,
  NeoantigenListBody,
  DomainListBody,
  ReleaseBody,
} from '../edge/contract/schemas.js';
import { edgeIndex, readAliases, readManifest, readStructureMap } from './helpers/tree.js';
import { shardOf } from '../edge/contract/shards.js';
import { demoRelease, type DemoRelease } from './helpers/demo-release.js';
import { buildFixtureRelease } from './helpers/fixture-release.js';

// The demo's whole tree: the point of these checks is every record of the real chr22 data and tables
// of many shards (the fixture release has one or two of each).
let demo: DemoRelease;
beforeAll(async () => {
  demo = await demoRelease();
});
const tree = () => demo.tree;
const read = <T>(root: string, path: string): T => JSON.parse(readFileSync(join(root, path), 'utf8')) as T;

describe('rendered demo tree', () => {
  it('validates every JSON body against its schema', async () => {
    const files = await fg('api/v1/**/*.json', { cwd: tree() });
    const perSchema: Record<string, number> = {};
    const failures: string[] = [];
    for (const path of files) {
      const schema = schemaForTreePath(path);
      if (!schema) continue;
      perSchema[schema] = (perSchema[schema] ?? 0) + 1;
      const errors = validate(schema, read(tree(), path));
      if (errors.length) failures.push(`${path}: ${errors.slice(0, 3).join('; ')}`);
    }
    expect(failures.slice(0, 5)).toEqual([]);
    expect(perSchema).toEqual({
      Release: 1,
      Gene: 1601,
      IsoformPage: 1601,
      Isoform: 6353,
      DomainList: 6353,
      NeoantigenList: 6353,
      PtmSiteList: 6353,
    });
  });

  it('lists every file in the manifest with its size, sha256 and content type, and nothing else', async () => {
    const { index, entries } = readManifest(tree());
    const manifest = { ...index, entries };
    const shardPaths = index.shards.map((s) => s.path);
    const onDisk = (await fg('**/*', { cwd: tree() }))
      .filter((p) => p !== treePaths.manifest && !shardPaths.includes(p))
      .sort();
    expect(manifest.entries.map((e) => e.path)).toEqual(onDisk);
    expect(manifest.files).toBe(onDisk.length);
    // Each shard lists the paths that hash to it, and the index vouches for each shard's bytes.
    index.shards.forEach((s, i) => {
      const bytes = readFileSync(join(tree(), s.path));
      expect(createHash('sha256').update(bytes).digest('hex')).toBe(s.sha256);
      for (const e of read<{ entries: { path: string }[] }>(tree(), s.path).entries)
        expect(shardOf(e.path, index.shards.length)).toBe(i);
    });
    expect(index.shards.length).toBeGreaterThan(1);
    for (const e of manifest.entries) {
      const bytes = readFileSync(join(tree(), e.path));
      expect(bytes.length, e.path).toBe(e.size);
      expect(createHash('sha256').update(bytes).digest('hex'), e.path).toBe(e.sha256);
      expect(e.content_type).toBe(contentTypeOf(e.path));
    }
    expect(manifest.bytes).toBe(manifest.entries.reduce((s, e) => s + e.size, 0));
  });

  it('reaches every isoform by id, unversioned id and name, in any case, and every gene by symbol and id', () => {
    const aliases = readAliases(tree());
    const isoformFiles = fg.sync('api/v1/isoforms/*.json', { cwd: tree() });
    expect(isoformFiles.length).toBe(6353);
    for (const path of isoformFiles) {
      const iso = read<IsoformBody>(tree(), path);
      const keys = [
        iso.transcript_id,
        iso.transcript_name,
        iso.transcript_name.toUpperCase(),
        iso.transcript_name.toLowerCase(),
      ];
      if (iso.transcript_id_unversioned) keys.push(iso.transcript_id_unversioned);
      for (const key of keys) expect(aliases.isoforms[key.toLowerCase()], key).toBe(iso.transcript_id);
      expect(path).toBe(treePaths.isoform(iso.transcript_id));
    }
    for (const path of fg.sync('api/v1/genes/*.json', { cwd: tree() })) {
      const gene = read<GeneBody>(tree(), path);
      expect(aliases.genes[gene.gene_id.toLowerCase()]).toBe(gene.gene_id);
      if (gene.gene_id_versioned) expect(aliases.genes[gene.gene_id_versioned.toLowerCase()]).toBe(gene.gene_id);
      const bySymbol = aliases.genes[gene.symbol.toLowerCase()];
      if (Array.isArray(bySymbol)) expect(bySymbol).toContain(gene.gene_id);
      else expect(bySymbol).toBe(gene.gene_id);
    }
    expect(aliases.genes.y_rna).toHaveLength(13); // a symbol naming 13 genes lists them all
  });

  it('pre-splits every gene isoform list into pages that list each isoform exactly once', () => {
    for (const path of fg.sync('api/v1/genes/*.json', { cwd: tree() })) {
      const gene = read<GeneBody>(tree(), path);
      const pages = fg.sync(`api/v1/genes/${gene.gene_id}/isoforms/*.json`, { cwd: tree() });
      expect(pages.length).toBe(Math.max(1, Math.ceil(gene.isoform_count / ISOFORM_PAGE_SIZE)));
      const listed = pages.flatMap((_, n) =>
        read<IsoformPageBody>(tree(), treePaths.geneIsoforms(gene.gene_id, n)).items.map((i) => i.transcript_id),
      );
      expect(listed).toEqual(gene.isoforms.map((i) => i.transcript_id));
      expect(new Set(listed).size).toBe(gene.isoform_count);
    }
  });

  it('ranks neoantigens best first, keeps the top 50, and counts all of them in the metrics', () => {
    let withMore = 0;
    for (const path of fg.sync('api/v1/isoforms/*/neoantigens.json', { cwd: tree() })) {
      const list = read<NeoantigenListBody>(tree(), path);
      const iso = read<IsoformBody>(tree(), treePaths.isoform(list.transcript_id));
      expect(list.items.length).toBe(Math.min(list.total, NEOANTIGEN_TOP));
      list.items.forEach((n, i) => {
        expect(n.rank).toBe(i + 1);
        if (i > 0) expect(n.affinity_nm!).toBeGreaterThanOrEqual(list.items[i - 1].affinity_nm!);
        expect(n.end - n.start + 1).toBe(n.peptide.length);
      });
      if (iso.coding) expect(iso.metrics.neoantigens).toBe(list.total);
      else expect(iso.metrics.neoantigens).toBeNull();
      if (list.total > NEOANTIGEN_TOP) withMore += 1;
    }
    expect(withMore).toBeGreaterThan(0); // the cut at 50 is exercised
  });

  it('marks every generated record and track as generated', () => {
    const release = read<ReleaseBody>(tree(), treePaths.release);
    expect(release.generated_tracks).toEqual(['domains', 'neoantigens', 'ptm', 'structures']);
    expect(
      release.sources
        .filter((s) => s.generated)
        .map((s) => s.track)
        .sort(),
    ).toEqual(release.generated_tracks);
    // Real pVACseq neoantigens sit beside the generated ones; domains are generated only.
    expect(
      release.sources
        .filter((s) => !s.generated)
        .map((s) => s.track)
        .sort(),
    ).toEqual(['gene_info', 'long_read', 'neoantigens', 'reference']);
    // 612 rows map to demo isoforms; IGLV6-57's 76 are the release protein itself and are skipped.
    expect(release.sources.find((s) => s.track === 'neoantigens' && !s.generated)?.records).toBe(612 - 76);
    const domains = fg
      .sync('api/v1/isoforms/*/domains.json', { cwd: tree() })
      .map((p) => read<DomainListBody>(tree(), p));
    const items = domains.flatMap((d) => d.items);
    expect(items.length).toBe(release.counts.domains);
    expect(items.every((d) => d.provenance === 'generated')).toBe(true);
    expect(new Set(items.map((d) => d.source))).toEqual(new Set(['pfam', 'ted']));
  });

  it('maps each structure to an mmCIF file in the tree whose CA B-factors average to the isoform pLDDT', () => {
    const map = readStructureMap(tree());
    const entries = Object.entries(map);
    expect(entries.length).toBe(read<ReleaseBody>(tree(), treePaths.release).counts.structures);
    for (const [transcriptId, s] of entries) {
      const text = readFileSync(join(tree(), s.path), 'utf8');
      expect(createHash('sha256').update(text).digest('hex')).toBe(s.sha256);
      expect(text.startsWith('data_')).toBe(true);
      const iso = read<IsoformBody>(tree(), treePaths.isoform(transcriptId));
      expect(iso.metrics.plddt).toBe(s.mean_plddt);
      expect(iso.links.structure).toBe(`/api/v1/isoforms/${transcriptId}/structure`);
    }
    const without = read<IsoformBody>(tree(), treePaths.isoform('PB.3797.1'));
    expect(without.metrics.plddt).toBeNull();
    expect(without.links.structure).toBeNull();
  });

  it('gives each domain the mean pLDDT of the structure over its residues, null without a structure', () => {
    const map = readStructureMap(tree());
    let checked = 0;
    for (const [transcriptId, s] of Object.entries(map)) {
      // Independent reading: the B factor of each CA line of the model, by residue number.
      const bFactor = new Map<number, number>();
      for (const line of readFileSync(join(tree(), s.path), 'utf8').split('\n')) {
        const f = line.trim().split(/\s+/);
        if (f[0] === 'ATOM' && f.includes('CA')) bFactor.set(Number(f[8]), Number(f[14]));
      }
      for (const d of read<DomainListBody>(tree(), treePaths.domains(transcriptId)).items) {
        const values = d.segments.flatMap(([a, b]) => Array.from({ length: b - a + 1 }, (_, i) => bFactor.get(a + i)!));
        expect(d.plddt, `${transcriptId} ${d.accession}`).toBeCloseTo(
          values.reduce((x, y) => x + y, 0) / values.length,
          2,
        );
        checked += 1;
      }
    }
    expect(checked).toBeGreaterThan(50);
    const unstructured = read<DomainListBody>(tree(), treePaths.domains('ENST00000006251.11'));
    expect(unstructured.items.length).toBeGreaterThan(0);
    expect(unstructured.items.every((d) => d.plddt === null)).toBe(true);
  });

  it('lists every edge shard in the edge index with its sha256, as the manifest does', () => {
    const { entries } = readManifest(tree());
    const shards = entries.filter((e) => e.path.startsWith('edge/') && e.path !== treePaths.edgeIndex);
    expect(shards.length).toBeGreaterThan(10);
    expect(edgeIndex(tree()).sha256).toEqual(Object.fromEntries(shards.map((e) => [e.path, e.sha256])));
  });

  it('renders search term shards in term order, each term with the documents it names, and typo shards the edge can load', () => {
    const { search } = edgeIndex(tree());
    const termShard = (i: number) => read<TermShardBody>(tree(), treePaths.searchTerms(i));
    const load = (path: string) => MiniSearch.loadJSON(readFileSync(join(tree(), path), 'utf8'), typoIndexOptions);
    expect(search.terms.length).toBeGreaterThan(1);
    const numberOf = new Map<string, number>();
    let previous = '';
    search.terms.forEach(({ from, terms }, i) => {
      const shard = termShard(i);
      expect(shard.terms.length).toBe(terms);
      expect(terms).toBeLessThanOrEqual(2048);
      expect(shard.terms[0]).toBe(from);
      // Sorted and distinct, across shards too: shard i holds exactly the terms of its range.
      for (const t of shard.terms) {
        expect(t > previous, `${previous} < ${t}`).toBe(true);
        previous = t;
      }
      shard.postings.forEach((list) => {
        for (let k = 0; k < list.length; k += 2) {
          const [id, , , n] = shard.docs[list[k]];
          // A document has one number, the same in every shard, below the directory's count.
          expect(numberOf.get(id) ?? n, id).toBe(n);
          numberOf.set(id, n);
        }
      });
    });
    expect(numberOf.size).toBe(1601 + 6353); // every gene and isoform is findable
    expect(search.documents).toBe(1601 + 6353);
    expect(new Set(numberOf.values()).size).toBe(numberOf.size);
    expect(Math.max(...numberOf.values())).toBe(search.documents - 1);
    const shardOfTerm = (t: string) => search.terms.filter((s) => s.from <= t).length - 1;
    const postingsOf = (t: string) => {
      const shard = termShard(shardOfTerm(t));
      const list = shard.postings[shard.terms.indexOf(t)];
      return Array.from({ length: list.length / 2 }, (_, k) => [
        shard.docs[list[2 * k]],
        SEARCH_FIELDS[list[2 * k + 1]],
      ]);
    };
    const prr5201 = ['i:ENST00000006251.11', 'PRR5', 'PRR5-201', numberOf.get('i:ENST00000006251.11')];
    const prr5 = ['g:ENSG00000186654', 'PRR5', 'proline rich 5', numberOf.get('g:ENSG00000186654')];
    // The symbol PRR5; and the word "PRR5" in PRR5-ARHGAP8's name, "PRR5-ARHGAP8 readthrough".
    expect(postingsOf('prr5').filter(([, field]) => field !== 'name')).toEqual([[prr5, 'symbol']]);
    // A full name is filed by its words, a hyphenated word as its parts (MAPK1's "mitogen-activated").
    expect(postingsOf('proline')).toContainEqual([prr5, 'name']);
    const mapk1 = [
      'g:ENSG00000100030',
      'MAPK1',
      'mitogen-activated protein kinase 1',
      numberOf.get('g:ENSG00000100030'),
    ];
    for (const word of ['mitogen', 'activated', 'kinase', '1'])
      expect(postingsOf(word)).toContainEqual([mapk1, 'name']);
    expect(search.terms.some((_, i) => termShard(i).terms.includes('mitogen-activated'))).toBe(false);
    expect(postingsOf('prr5-201')).toEqual([[prr5201, 'transcript_name']]);
    expect(postingsOf('enst00000006251')).toEqual([[prr5201, 'transcript_id_unversioned']]);
    // Typo shards file each gene symbol of 3 characters or more under its head key and its tail key.
    const typo = Array.from(
      { length: search.typo.shards },
      (_, i) =>
        new Set(
          load(treePaths.searchTypo(i))
            .search(MiniSearch.wildcard)
            .map((r) => r.id),
        ),
    );
    let filed = 0;
    for (const path of fg.sync('api/v1/genes/*.json', { cwd: tree() })) {
      const g = read<GeneBody>(tree(), path);
      if (g.symbol.length < 3) continue;
      for (const key of typoKeys(g.symbol.toLowerCase()))
        expect(typo[shardOf(key, search.typo.shards)].has(`g:${g.gene_id}`), `${g.symbol} under ${key}`).toBe(true);
      filed++;
    }
    expect(filed).toBeGreaterThan(1500);
    // They store the gene's full name, which fuzzy hits show.
    const [head] = typoKeys('mapk1');
    const stored = load(treePaths.searchTypo(shardOf(head, search.typo.shards)))
      .search('mapk1', { prefix: false })
      .find((r) => r.id === 'g:ENSG00000100030');
    expect(stored).toMatchObject({ symbol: 'MAPK1', name: 'mitogen-activated protein kinase 1' });
  });

  it('renders an OpenAPI 3.1 document covering every route, whose refs all resolve', () => {
    const doc = read<{
      openapi: string;
      paths: Record<string, unknown>;
      components: Record<string, Record<string, unknown>>;
    }>(tree(), treePaths.openapi);
    expect(doc.openapi).toBe('3.1.0');
    expect(Object.keys(doc.paths).sort()).toEqual(routes.map((r) => r.path).sort());
    const refs = JSON.stringify(doc).match(/"\$ref":"[^"]+"/g) ?? [];
    expect(refs.length).toBeGreaterThan(10);
    for (const ref of refs) {
      const [kind, name] = ref
        .replace(/^"\$ref":"#\/components\//, '')
        .replace(/"$/, '')
        .split('/');
      expect(doc.components[kind]?.[name], ref).toBeDefined();
    }
  });
});

describe('determinism', () => {
  it('builds a byte-identical tree from the same inputs', async () => {
    const work = mkdtempSync(join(tmpdir(), 'isoatlas-determinism-'));
    try {
      // The fixture release built again, from its inputs to its tree, beside the run's.
      const second = await buildFixtureRelease(work);
      const a = readFileSync(join(inject('fixtureTree'), treePaths.manifest));
      const b = readFileSync(join(second.tree, treePaths.manifest));
      // The manifest holds every file's sha256 (checked against the files above), so equal manifests
      // mean equal trees.
      expect(b.equals(a)).toBe(true);
    } finally {
      rmSync(work, { recursive: true, force: true });
    }
  });
});

describe('bounded batches', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'isoatlas-batches-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('renders the same tree one gene at a time as in the default batches', async () => {
    const out = join(dir, 'one-gene-batches');
    await renderTree(inject('fixtureDb'), out, { progress: false, genesPerBatch: 1 });
    const a = readFileSync(join(inject('fixtureTree'), treePaths.manifest));
    expect(readFileSync(join(out, treePaths.manifest)).equals(a)).toBe(true);
    // The scratch tables beside the output are gone.
    expect(readdirSync(dir)).toEqual(['one-gene-batches']);
  });

  it('reports the first isoform alias clash in transcript id order, and leaves nothing behind', async () => {
    const db = join(dir, 'clash.sqlite');
    copyFileSync(inject('fixtureDb'), db);
    const conn = new Database(db);
    const ids = conn.prepare('SELECT transcript_id FROM isoforms ORDER BY transcript_id').pluck().all() as string[];
    const rename = conn.prepare('UPDATE isoforms SET transcript_name = ? WHERE transcript_id = ?');
    // Two clashes: the last isoform named like the first, and the fifth like the fourth (met first).
    rename.run(ids[0], ids[ids.length - 1]);
    rename.run(ids[3], ids[4]);
    conn.close();
    const out = join(dir, 'clash-tree');
    await expect(renderTree(db, out, { progress: false })).rejects.toThrow(
      `isoform alias "${ids[3]}" (name of ${ids[4]}) already names ${ids[3]}; isoform ids and names must not collide`,
    );
    expect(readdirSync(dir).sort()).toEqual(['clash.sqlite', 'one-gene-batches']);
  });
});

describe('isoform pages of a gene with more than 100 isoforms (GENCODE v49: EEF1D has 144)', () => {
  let dir: string;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'isoatlas-v49-tree-'));
    await importCore(loadCoreConfig(join(__dirname, 'fixtures/v49.config.json')), join(dir, 'v49.sqlite'));
    await renderTree(join(dir, 'v49.sqlite'), join(dir, 'tree'), { progress: false });
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('splits at 100 and links the next page', () => {
    const root = join(dir, 'tree');
    const aliases = readAliases(root);
    const geneId = aliases.genes.eef1d as string;
    const gene = read<GeneBody>(root, treePaths.gene(geneId));
    expect(gene.isoform_count).toBe(144);
    const p0 = read<IsoformPageBody>(root, treePaths.geneIsoforms(geneId, 0));
    const p1 = read<IsoformPageBody>(root, treePaths.geneIsoforms(geneId, 1));
    expect([p0.items.length, p1.items.length]).toEqual([100, 44]);
    expect(p0.next).toBe(`/api/v1/genes/${geneId}/isoforms?limit=100&offset=100`);
    expect(p1.next).toBeNull();
    expect([...p0.items, ...p1.items].map((i) => i.transcript_id)).toEqual(gene.isoforms.map((i) => i.transcript_id));
    expect(gene.isoforms[0].canonical).toBe(true);
    expect(validate('IsoformPage', p0)).toEqual([]);
    expect(statSync(join(root, treePaths.geneIsoforms(geneId, 2)), { throwIfNoEntry: false })).toBeUndefined();
  });
});
