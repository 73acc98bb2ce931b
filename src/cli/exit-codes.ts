// The exit codes (docs/cli.md, "Exit codes and errors"): 0 for a clean stop or a command that completed, 2
// when the user's input is wrong, 1 for anything else. The layers below raise errors of a kind
// (src/util/errors.ts, src/kube/errors.ts); this is the one place that turns a kind into a code, and an
// error into the one sentence on stderr.
import { CommanderError } from 'commander';
import { KubeError } from '../kube/errors.ts';
import { errorMessage, KubediffError, UsageError } from '../util/errors.ts';
import { printable } from '../util/terminal-text.ts';

export const EXIT_OK = 0;
export const EXIT_FAILURE = 1;
export const EXIT_USAGE = 2;
/** `diff`: the versions differ (as diff(1) and `kubectl diff`); its failures then exit EXIT_USAGE. */
export const EXIT_DIFFERENCES = 1;

/** A command that ends with an exit code of its own, having said all it had to (`diff`: differences). */
export class ExitCode extends Error {
  readonly code: number;
  constructor(code: number) {
    super(`exit ${code}`);
    this.code = code;
  }
}

/**
 * A failure of a command whose exit code 1 means something else (`diff`): said like any error, with
 * `code` as the exit code.
 */
export class FailureWithCode extends Error {
  readonly error: unknown;
  readonly code: number;
  constructor(error: unknown, code: number) {
    super(errorMessage(error));
    this.error = error;
    this.code = code;
  }
}

/** The exit code of a command that ended with `error`. */
export function exitCodeOf(error: unknown): number {
  if (error instanceof CommanderError) {
    const help = error.code === 'commander.helpDisplayed' || error.code === 'commander.version';
    return help || error.code === 'commander.help' || error.exitCode === 0 ? EXIT_OK : EXIT_USAGE;
  }
  return error instanceof UsageError ? EXIT_USAGE : EXIT_FAILURE;
}

/** Says what `error` means on stderr, in one sentence (stack frames with --debug); returns the exit code. */
export function reportError(error: unknown, debug: boolean): number {
  if (error instanceof ExitCode) return error.code;
  if (error instanceof FailureWithCode) {
    const code = reportError(error.error, debug);
    return code === EXIT_OK ? EXIT_OK : error.code;
  }
  if (error instanceof CommanderError) {
    if (exitCodeOf(error) === EXIT_OK) return EXIT_OK;
    const message = error.message
      .replace(/^error: /, '')
      .replace(/\.$/, '')
      // Commander's "…is invalid. Allowed choices are a, b." is two sentences; the brief wants one.
      .replace(/\. Allowed choices are /, '; allowed choices are ');
    process.stderr.write(`kubediff: ${printable(message)}; run \`kubediff --help\` for usage.\n`);
    return EXIT_USAGE;
  }
  if (error instanceof KubediffError) {
    // A config file's problems are one per line.
    process.stderr.write(`kubediff: ${printable(error.message, { newlines: true })}\n`);
    if (debug) process.stderr.write(stackFrames(error.cause instanceof Error ? error.cause : error));
    return exitCodeOf(error);
  }
  if (error instanceof KubeError) {
    process.stderr.write(`kubediff: ${printable(error.message)}\n`);
    if (debug) process.stderr.write(stackFrames(error));
    return EXIT_FAILURE;
  }
  process.stderr.write(
    `kubediff: unexpected error: ${printable(errorMessage(error))} (run with --debug for details)\n`,
  );
  if (debug) process.stderr.write(stackFrames(error));
  return EXIT_FAILURE;
}

/**
 * --debug: where an error came from, as its stack frames (function, file, line) only. Never the message
 * of the error underneath: the sentence above already says what failed, and that message may quote
 * what it was reading (a kubeconfig's YAML error shows the lines around the mistake, token included).
 */
function stackFrames(error: unknown): string {
  if (!(error instanceof Error) || !error.stack) return '';
  const frames = error.stack.split('\n').filter((line) => /^\s+at /.test(line));
  return `${printable(error.name)}, raised at:\n${frames.map((frame) => printable(frame)).join('\n')}\n`;
}
