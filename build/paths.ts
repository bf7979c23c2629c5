// Where the project is. Both build/ (sources, run by tests) and dist/ (the compiled CLI, one bundle)
// sit one level below the project root, so the same URL resolves from either.
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const PROJECT_ROOT = resolve(fileURLToPath(new URL('..', import.meta.url)));

/** The demo release: its config, working directory, seed and the real neoantigen sample it uses. */
export const DEMO = {
  config: join(PROJECT_ROOT, 'data/demo/release.config.json'),
  work: join(PROJECT_ROOT, '.isoatlas/demo'),
  seed: 22,
  realNeoantigens: join(PROJECT_ROOT, 'data/samples/neoantigens/pvacseq_Test.MHC_I.all_epitopes.tsv.gz'),
  geneInfo: join(PROJECT_ROOT, 'data/gene-info/org.Hs.eg.db.chr22.tsv.gz'),
};
