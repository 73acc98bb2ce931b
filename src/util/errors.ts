// Errors that reach the user. Each carries one sentence (what, where, how to fix); the CLI prints
// `message` alone, never a stack trace, and alone decides the exit code from the class
// (src/cli/exit-codes.ts): a UsageError is the user's input to fix, anything else a failure.

/** A failure the user can act on, said in one sentence. */
export class KubediffError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'KubediffError';
  }
}

/** The user's input is wrong: a flag, an environment variable, a config file, a kubeconfig, a file path. */
export class UsageError extends KubediffError {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
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

/** Why a file could not be read, in a few words: 'no such file', 'permission denied', … */
export function fileReadProblem(error: unknown): string {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  if (code === 'ENOENT') return 'no such file';
  if (code === 'EACCES' || code === 'EPERM') return 'permission denied';
  if (code === 'EISDIR') return 'it is a directory';
  return error instanceof Error ? error.message : String(error);
}

/** A file system error in a few words, with its code: 'no space left on the device (ENOSPC)'. */
export function describeFileError(error: unknown): string {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  const words: Record<string, string> = {
    ENOSPC: 'no space left on the device',
    EDQUOT: 'the disk quota is used up',
    EROFS: 'the file system is read-only',
    EACCES: 'permission denied',
    EPERM: 'permission denied',
    ELOOP: 'it is a symbolic link',
    EISDIR: 'it is a directory',
    ENOENT: 'no such file or directory',
    EIO: 'an input/output error',
  };
  const said = code ? words[code] : undefined;
  if (said) return `${said} (${code})`;
  return error instanceof Error ? error.message : String(error);
}
