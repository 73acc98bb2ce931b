// Errors that reach the user. Each carries one sentence (what, where, how to
// fix) and the documented exit code: 2 for usage and configuration errors, 1
// for everything else. The CLI prints `message` alone, never a stack trace.

export const EXIT_OK = 0;
export const EXIT_FAILURE = 1;
export const EXIT_USAGE = 2;

export class UserError extends Error {
  readonly exitCode: number;
  constructor(message: string, exitCode: number = EXIT_FAILURE, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'UserError';
    this.exitCode = exitCode;
  }
}

/** A usage or configuration mistake: exit code 2. */
export class UsageError extends UserError {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, EXIT_USAGE, options);
    this.name = 'UsageError';
  }
}

export function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** A flag's or environment variable's bad value: `invalid --flag "value": …` or `invalid NAME="value": …`. */
export function invalidSetting(name: string, text: string, problem: string): UsageError {
  const shown = name.startsWith('-') ? `${name} "${text}"` : `${name}="${text}"`;
  return new UsageError(`invalid ${shown}: ${problem}.`);
}
