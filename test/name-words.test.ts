// wordsInName (edge/name-match.ts), which checks names for a query's common words without building the
// name's words, against nameWords, which defines a name's words: on every full name of the demo release
// with every query word drawn from them, and on names that are not ASCII.
import fg from 'fast-glob';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { nameWords } from '../edge/contract/search.js';
import type { GeneBody } from '../edge/contract/schemas.js';
import { wordsInName } from '../edge/name-match.js';
import { demoRelease } from './helpers/demo-release.js';

/** What wordsInName must answer: the bits of the wanted words that nameWords finds in the name. */
const expected = (name: string, words: string[], wanted: number) =>
  words.reduce((bits, w, j) => (wanted & (1 << j) && nameWords(name).includes(w) ? bits | (1 << j) : bits), 0);

let names: string[];

beforeAll(async () => {
  const { tree } = await demoRelease();
  names = fg
    .sync('api/v1/genes/*.json', { cwd: tree })
    .map((path) => (JSON.parse(readFileSync(join(tree, path), 'utf8')) as GeneBody).name)
    .filter((n): n is string => n !== null);
});

describe('wordsInName', () => {
  it('finds in every demo name the words nameWords finds, and only the wanted ones', () => {
    let found = 0;
    names.forEach((name, i) => {
      // The name's own words, a word of the next name, a prefix of a word, and a word with its case.
      const next = nameWords(names[(i + 1) % names.length]);
      const own = nameWords(name);
      const words = [...new Set([...own, next[0], own[0].slice(0, -1) || 'x', 'protein', 'pseudogene', '1'])];
      for (const wanted of [(1 << words.length) - 1, 0b1010101010]) {
        const bits = wordsInName(name, words, wanted);
        expect(bits, `${name} ${words} ${wanted}`).toBe(expected(name, words, wanted));
        if (bits) found++;
      }
    });
    expect(found).toBeGreaterThan(names.length);
  });

  it('splits at punctuation and ignores case, as nameWords does, ASCII or not', () => {
    const words = ['mitogen', 'activated', 'kinase', '1', 'α', 'straße', 'or22', '5'];
    const all = (1 << words.length) - 1;
    for (const name of [
      'Mitogen-Activated protein KINASE 1',
      'immunoglobulin kappa variable 1/OR22-5 (pseudogene)',
      'TNF-α induced protein 8 like 1',
      'Straße-activated kinase 11',
      'kinase1 activated-mitogen',
      '',
      '--',
    ])
      expect(wordsInName(name, words, all), name).toBe(expected(name, words, all));
  });
});
