// Errors the CLI maps to exit codes (build/cli.ts main): a usage error is the caller's to fix in the
// command line (exit 2); InputError (build/import/input.ts) names a bad input file (exit 3).
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}
