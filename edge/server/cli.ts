// `isoatlas-server`: the mirror operator's commands, `serve`, `mirror` and `nginx-config`, as one file that runs on
// Node >= 20 with no npm install and no native module (`isoatlas bundle-server` writes it with every
// package inside). Same options, handler and exit codes as the full CLI's commands of those names.
import { Command } from 'commander';
import { addLogOptions, runProgram } from '../../build/common/cli-options.js';
import { addServeCommands } from './commands.js';

declare const ISOATLAS_VERSION: string;

export function serverProgram(): Command {
  const cli = new Command('isoatlas-server')
    .description(
      'Serve an isoatlas tree or mirror, keep a mirror in sync, and write its nginx front (the one-file build of `isoatlas serve`, `isoatlas mirror` and `isoatlas nginx-config`).',
    )
    .addHelpText(
      'after',
      '\nExit codes: 0 success, 1 unexpected failure, 2 usage error, 3 invalid input, 4 source or storage unreachable or refusing.',
    )
    .version(typeof ISOATLAS_VERSION === 'string' ? ISOATLAS_VERSION : 'dev', '-V, --version', 'print the version')
    .showHelpAfterError('(run with --help for usage)')
    .exitOverride();
  addServeCommands(cli, { keysDir: process.env.ISOATLAS_KEYS_DIR ?? 'isoatlas-keys' });
  addLogOptions(cli);
  return cli;
}

process.exitCode = await runProgram(serverProgram(), process.argv, 'isoatlas-server');
