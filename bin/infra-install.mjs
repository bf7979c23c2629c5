#!/usr/bin/env node
// infra/ (the CDN as AWS CDK code) has its own package.json and lock, so the project's `npm ci`
// leaves CDK out of what consumers, curators and mirror operators install. The scripts that load
// CDK (test, test:unit, typecheck, synth) run this first: it installs infra's locked dependencies
// when infra/node_modules is missing or older than infra's lock, and does nothing otherwise.
import { spawnSync } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const infra = fileURLToPath(new URL('../infra', import.meta.url));
const lock = join(infra, 'package-lock.json');
// npm writes this copy of the lock at the end of every install, so its time is the install's.
const installed = join(infra, 'node_modules/.package-lock.json');

if (!existsSync(installed) || statSync(installed).mtimeMs < statSync(lock).mtimeMs) {
  // The npm that runs this script (npm_execpath) when there is one, so both installs use one npm.
  const [command, prefix] = process.env.npm_execpath ? [process.execPath, [process.env.npm_execpath]] : ['npm', []];
  const args = [...prefix, 'ci', '--prefix', infra, '--no-audit', '--no-fund'];
  console.error(`installing infra/'s dependencies (AWS CDK): npm ${args.slice(prefix.length).join(' ')}`);
  const result = spawnSync(command, args, {
    stdio: 'inherit',
    shell: process.platform === 'win32' && command === 'npm',
  });
  process.exit(result.status ?? 1);
}
