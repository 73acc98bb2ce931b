// stdout and stderr when their reader goes away or fails: never an unhandled 'error' event with a stack
// trace. main() installs the handlers before any command runs.
import { printable } from '../util/terminal-text.ts';
import { EXIT_FAILURE } from './exit-codes.ts';

let handling = false;

/** Once per process, however many times main() runs (tests run it in-process). */
export function handleStreamErrors(): void {
  if (handling) return;
  handling = true;
  process.stdout.on('error', onStdoutError);
  process.stderr.on('error', onStderrError);
}

/**
 * A reader that leaves early (`kubediff resources | head`) closes stdout (EPIPE): there is nobody left to
 * tell, so it is not an error. `watch` also stops on it (StreamOutput). Any other failure to write stdout
 * is one line on stderr and exit code 1.
 */
function onStdoutError(error: NodeJS.ErrnoException): void {
  if (error.code === 'EPIPE') return;
  process.stderr.write(`kubediff: cannot write to stdout: ${printable(error.message)}.\n`);
  process.exit(EXIT_FAILURE);
}

/**
 * stderr closed (`kubediff watch 2>&1 | head -3`, or a log reader that went away): like a closed stdout,
 * not a crash. Nothing can be said any more, so there is nothing to report; `watch` stops the way it does
 * on SIGTERM (sinks drained, state recorded, Lease released) rather than run on with no way to tell
 * anyone about trouble. Log lines are dropped from then on (src/util/log.ts).
 */
let onStderrClosed: (reason: string) => void = () => {};
export const stderrClosed = new Promise<string>((resolve) => {
  onStderrClosed = resolve;
});

function onStderrError(error: NodeJS.ErrnoException): void {
  onStderrClosed(error.code === 'EPIPE' ? 'stderr closed' : `stderr failed: ${error.message}`);
}

let exitAtOnce = false;

/**
 * After a command: a stdout reader that stopped reading still holds output the shutdown report has
 * counted as not delivered, and Node would wait for it forever. Nothing else is left to do: the process
 * exits at once.
 */
export function exitAtOnceIfStdoutStalled(): void {
  if (process.stdout.writableLength > 0) exitAtOnce = true;
}

/** After main(): true when output a stalled reader never took would keep Node waiting (see `watch`). */
export function mustExitAtOnce(): boolean {
  return exitAtOnce;
}
