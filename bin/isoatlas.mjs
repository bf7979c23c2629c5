#!/usr/bin/env node
// The `isoatlas` command: the CLI compiled ahead of time into dist/ (bin/compile.mjs).
let cli;
try {
  cli = await import('../dist/cli.mjs');
} catch (err) {
  if (err?.code !== 'ERR_MODULE_NOT_FOUND' || !String(err.message).includes('dist/cli.mjs')) throw err;
  process.stderr.write(
    'isoatlas: the command is not compiled yet (no dist/cli.mjs): run `npm run build` (npm ci does it) in the isoatlas directory\n',
  );
  process.exit(1);
}
process.exitCode = await cli.main(process.argv);
