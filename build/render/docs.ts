// The docs page (`/api/v1/docs`): Swagger UI (npm swagger-ui-dist) over the release's OpenAPI
// document, rendered into the tree with the scripts and styles it loads, so a mirror serves it
// offline and the page reaches no other host (its validator is off).
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { DOCS_PAGE, treePaths } from '../../edge/contract/tree.js';
import type { TreeWriter } from './tree-writer.js';

const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>isoatlas API v1</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="docs/swagger-ui.css">
</head>
<body>
<div id="docs"></div>
<script src="docs/swagger-ui-bundle.js"></script>
<script src="docs/docs.js"></script>
</body>
</html>
`;

// The page is at /api/v1/docs, so `openapi.json` is the release's document; the page's own query
// (?release=) is passed on, so a pinned page documents and tries the pinned release.
const START = `window.addEventListener('load', function () {
  window.ui = SwaggerUIBundle({
    url: 'openapi.json' + window.location.search,
    dom_id: '#docs',
    deepLinking: true,
    tryItOutEnabled: true,
    displayRequestDuration: true,
    validatorUrl: null,
    presets: [SwaggerUIBundle.presets.apis],
    layout: 'BaseLayout'
  });
});
`;

export async function renderDocs(w: TreeWriter): Promise<void> {
  const dist = dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));
  await w.bytesAt(treePaths.docs(DOCS_PAGE), Buffer.from(PAGE, 'utf8'));
  await w.bytesAt(treePaths.docs('docs.js'), Buffer.from(START, 'utf8'));
  await w.bytesAt(treePaths.docs('swagger-ui-bundle.js'), readFileSync(join(dist, 'swagger-ui-bundle.js')));
  await w.bytesAt(treePaths.docs('swagger-ui.css'), readFileSync(join(dist, 'swagger-ui.css')));
  // Swagger UI is Apache-2.0: its licence travels with it.
  await w.bytesAt(
    treePaths.docs('swagger-ui-LICENSE.txt'),
    Buffer.concat([readFileSync(join(dist, 'LICENSE')), Buffer.from('\n'), readFileSync(join(dist, 'NOTICE'))]),
  );
}
