// When a long-running command (`watch`, `ui`) is asked to stop: SIGINT, SIGTERM, or stderr gone.
import type { Logger } from '../util/log.ts';
import { EXIT_FAILURE } from './exit-codes.ts';
import { stderrClosed } from './standard-streams.ts';

/** Resolves with the reason on the first request to stop. */
export function stopRequested(log: Logger): Promise<string> {
  return Promise.race([stopSignal(log), stderrClosed]);
}

const REPEATED_SIGNAL_WINDOW_MS = 1_000;

/**
 * Resolves on the first SIGINT/SIGTERM; a second one, a moment later, ends the process at once. The same
 * signal arriving twice together is one request: Ctrl-C reaches both the launcher (bin/kubediff.js) and
 * this process, and the launcher forwards it too.
 */
function stopSignal(log: Logger): Promise<string> {
  return new Promise((resolve) => {
    let firstAt: number | undefined;
    const onSignal = (signal: NodeJS.Signals) => {
      if (firstAt !== undefined) {
        if (Date.now() - firstAt < REPEATED_SIGNAL_WINDOW_MS) return;
        log.warn(`${signal} again: exiting without finishing deliveries.`);
        process.exit(EXIT_FAILURE);
      }
      firstAt = Date.now();
      resolve(signal);
    };
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
  });
}
