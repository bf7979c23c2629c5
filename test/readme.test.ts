// Every curl example in the README's "Using the API" block works against the demo served by
// `isoatlas serve`: the documentation is tested like code.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { demoRelease } from './helpers/demo-release.js';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { startServer } from './helpers/server.js';

const readme = readFileSync(join(__dirname, '../README.md'), 'utf8');
const usage = readme.slice(readme.indexOf('## Using the API'));
const block = usage.slice(usage.indexOf('```sh') + 5, usage.indexOf('```', usage.indexOf('```sh') + 5));
const examples = block
  .split('\n')
  .map((line) => line.replace(/\s+#.*$/, '').trim())
  .filter((line) => line.startsWith('curl '));

let server: Awaited<ReturnType<typeof startServer>>;
beforeAll(async () => {
  // The demo, as `npm start` serves it: the release the README's examples name.
  server = await startServer({ dir: (await demoRelease()).tree });
});
afterAll(async () => {
  await server.stop();
});

describe('README curl examples', () => {
  it('has examples for every endpoint', () => {
    expect(examples.length).toBeGreaterThanOrEqual(14);
    for (const path of ['/genes/', '/isoforms', '/domains', '/neoantigens', '/structure', '/search', '/openapi.json']) {
      expect(
        examples.some((e) => e.includes(path)),
        path,
      ).toBe(true);
    }
  });

  it.each(examples)('%s', async (example) => {
    const follow = / -L /.test(example);
    const target = /(?:"([^"]+)"|(\$API\S*))$/.exec(example);
    expect(target, example).not.toBeNull();
    const url = (target![1] ?? target![2]).replace('$API', server.api);
    const res = await fetch(url, { redirect: follow ? 'follow' : 'manual' });
    const ok = res.status === 200 || (!follow && res.status === 307 && /-i /.test(example));
    expect(ok, `${example} → ${res.status}`).toBe(true);
    if (res.status === 200) expect(res.headers.get('content-type')).toMatch(/^(application\/json|chemical\/x-mmcif)/);
  });
});
