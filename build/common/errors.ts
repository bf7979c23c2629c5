// Errors the CLI maps to exit codes (build/cli.ts main): a usage error is the caller's to fix in the
// command line (exit 2); InputError (build/import/input.ts) names a bad input file (exit 3).
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}

/** An input the command was given is not what it must be (a file, a tree, a name): exit 3, the
 * message naming what and where. InputError, NamingError and NotATreeError are kinds of it. */
export class BadInputError extends Error {}
