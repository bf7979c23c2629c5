#!/usr/bin/env node
// The `isoatlas` command. The CLI is TypeScript; tsx compiles it on the fly so curators need no build step.
import { register } from 'tsx/esm/api';

register();
const { main } = await import('../build/cli.ts');
process.exitCode = await main(process.argv);
