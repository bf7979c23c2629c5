// Search quality on the demo release (real chr22 symbols, ids and names), with the sampler the
// human-scale benchmark uses: 1,000 genes and 1,000 isoforms, each queried by every exact symbol,
// id and name it has (its own record must be the first hit), 1,000 gene symbols with one random
// typo (the gene must be in the top 3 for at least 95% of them), and every named gene by its full
// name (the gene must come first for at least 95% of them: recall@1).
import { beforeAll, describe, expect, it } from 'vitest';
import { demoRelease } from './helpers/demo-release.js';
import { evaluateQuality, sampleQueries, typo, type QualityResult } from '../bench/search-quality.js';
import { Rng } from '../build/generate/random.js';
import { ReleaseData } from '../edge/release-data.js';
import { LocalOrigin } from '../edge/origins/local.js';
import { VerifiedOrigin } from '../edge/origins/verified.js';
import { editDistance, search } from '../edge/search-engine.js';

let result: QualityResult;

beforeAll(async () => {
  const { tree } = await demoRelease();
  const data = new ReleaseData(new VerifiedOrigin(new LocalOrigin(tree)));
  result = await evaluateQuality((q, limit) => search(data, q, limit), sampleQueries(tree, 1000, 7, true));
}, 120_000);

describe('search quality on the demo release', () => {
  it('ranks the exact record first for every sampled symbol, gene id, transcript id and name', () => {
    expect(result.exactQueries).toBeGreaterThan(4000);
    expect(result.exactMisses).toEqual([]);
  });

  it('finds the gene in the top 3 for at least 95% of one-typo symbols', () => {
    expect(result.typoQueries).toBeGreaterThan(900);
    const rate = result.typoInTop3 / result.typoQueries;
    console.log(
      `one-typo symbols: ${result.typoInTop3}/${result.typoQueries} in the top 3 (${(100 * rate).toFixed(1)}%), ${result.typoSkipped} typos spelled another name`,
    );
    expect(rate).toBeGreaterThanOrEqual(0.95);
  });
});

describe('search by full name on the demo release', () => {
  it('finds the gene first by its full name for at least 95% of named genes (recall@1)', () => {
    expect(result.nameQueries).toBeGreaterThan(900); // the demo's named genes
    const recall = result.nameFirst / result.nameQueries;
    console.log(
      `full names: ${result.nameFirst}/${result.nameQueries} first (${(100 * recall).toFixed(1)}%); misses: ${JSON.stringify(result.nameMisses.slice(0, 5))}`,
    );
    expect(recall).toBeGreaterThanOrEqual(0.95);
  });
});

describe('edit distance', () => {
  it('counts a transposition of neighbours as one edit, and stops early past the bound', () => {
    expect(editDistance('tp35', 'tp53', 2)).toBe(1);
    expect(editDistance('prr6', 'prr5', 2)).toBe(1);
    expect(editDistance('prr', 'prr5', 2)).toBe(1);
    expect(editDistance('abcd', 'badc', 2)).toBe(2);
    expect(editDistance('kitten', 'sitting', 5)).toBe(3);
    expect(editDistance('a', 'abcdef', 2)).toBe(3); // more than 2: reported as bound + 1
  });

  it('each generated typo is one edit from the word', () => {
    const rng = new Rng(3);
    for (let i = 0; i < 500; i++) {
      const word = ['TP53', 'PRR5', 'IGLV3-26', 'ABC', 'Y_RNA'][i % 5];
      const t = typo(() => rng.next(), word);
      expect(
        editDistance(t.text.toLowerCase(), word.toLowerCase(), 2),
        `${word} → ${t.text} (${t.edit})`,
      ).toBeLessThanOrEqual(1);
    }
  });
});
