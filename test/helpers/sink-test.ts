// What the sink unit tests share: a logger that remembers its lines, and loopback receivers and sinks that
// are closed after the test file (sinks first, then the receivers they post to).
import { after } from 'node:test';
import type { Logger } from '../../src/util/log.ts';
import { HttpReceiver } from './http-receiver.ts';

export interface MemoryLog extends Logger {
  /** Every line, prefixed 'info: ', 'warn: ' or 'debug: '. */
  lines: string[];
  /** The warnings alone, without prefix. */
  warnings: string[];
  /** Resolves with the first line (prefixed) matching `pattern`, once there is one; rejects after `timeoutMs`. */
  waitForLine(pattern: RegExp, timeoutMs?: number): Promise<string>;
}

export function memoryLog(): MemoryLog {
  const lines: string[] = [];
  const warnings: string[] = [];
  const waiters = new Set<() => void>();
  const add = (line: string) => {
    lines.push(line);
    for (const waiter of [...waiters]) waiter();
  };
  return {
    lines,
    warnings,
    info: (m) => add(`info: ${m}`),
    warn: (m) => {
      warnings.push(m);
      add(`warn: ${m}`);
    },
    debug: (m) => add(`debug: ${m}`),
    waitForLine(pattern, timeoutMs = 60_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const line = lines.find((l) => pattern.test(l));
          if (line === undefined) return;
          waiters.delete(check);
          clearTimeout(timer);
          resolve(line);
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`no log line matching ${pattern} within ${timeoutMs} ms:\n${lines.join('\n')}`));
        }, timeoutMs);
        waiters.add(check);
        check();
      });
    },
  };
}

/** Registers the `after` hook that closes what `receiver()` started and `track()` was given. */
export function sinkTestKit<S extends { close(timeoutMs: number): Promise<unknown> }>(): {
  receiver: typeof HttpReceiver.start;
  track: (sink: S) => S;
} {
  const receivers: HttpReceiver[] = [];
  const sinks: S[] = [];
  after(async () => {
    await Promise.all(sinks.map((sink) => sink.close(0)));
    await Promise.all(receivers.map((receiver) => receiver.close()));
  });
  return {
    receiver: async (...args) => {
      const started = await HttpReceiver.start(...args);
      receivers.push(started);
      return started;
    },
    track: (sink) => {
      sinks.push(sink);
      return sink;
    },
  };
}
