// Runs the real kubediff CLI the way a user does (`node bin/kubediff.js …`) and lets tests await what it prints.
//
// stdout is read as JSON lines: every line must parse as a JSON object (with `-o json` stdout is nothing else), and
// a line that does not makes every wait fail with that line in the message. Children are tracked and killed when
// the test process exits, so a failing test does not leave a kubediff running; `killAll()` does it on demand.

import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { testCluster } from './cluster-env.ts';
import { contractViolations, describeEvent, type TestEvent } from './events.ts';

/** The CLI entry point, as installed (`bin` in package.json). */
export const KUBEDIFF_BIN = fileURLToPath(new URL('../../bin/kubediff.js', import.meta.url));

const DEFAULT_TIMEOUT_MS = 15_000;
const STDERR_TAIL_CHARS = 2_000;
const EVENTS_IN_MESSAGES = 20;

export interface RunOptions {
  /** Added to the parent's environment; a key set to `undefined` is removed from it. */
  env?: Record<string, string | undefined>;
  cwd?: string;
  /** Default timeout of every wait on this process (and of the run, for `runKubediffToCompletion`). 15 s. */
  timeoutMs?: number;
  /** Run this script instead of bin/kubediff.js (for testing the helper itself). */
  script?: string;
  /**
   * Run this executable with the arguments instead of Node with a script: an installed `kubediff`,
   * the single executable, or `kubectl` with the plugin (the arguments then start with `kubediff`).
   */
  command?: string;
  /** Treat every event that breaks the event contract (see events.ts) like a non-JSON line. */
  checkEvents?: boolean;
}

export interface ExitResult {
  /** Exit code; null when the process was ended by a signal. */
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

interface WaitForEventOptions {
  timeoutMs?: number;
  /** What is awaited, in words; it leads the failure message. */
  description?: string;
  /** Only consider events from this index of `events` on (e.g. `kd.events.length` before an action). Default 0. */
  since?: number;
}

interface ExpectNoEventOptions {
  description?: string;
  /** Also consider events from this index on that arrived before the call. Default: only new events. */
  since?: number;
}

type EventPredicate = (event: TestEvent) => boolean;

export interface KubediffProcess {
  readonly args: readonly string[];
  readonly pid: number | undefined;
  /** Events parsed from stdout so far, in order (live array). */
  readonly events: readonly TestEvent[];
  /** Every complete stdout line so far, JSON or not (live array). */
  readonly stdoutLines: readonly string[];
  readonly stdout: string;
  readonly stderr: string;
  /** Set once the process has exited and its output has been read to the end. */
  readonly exitResult: ExitResult | undefined;
  /** Resolves with the first matching event, including ones already received. */
  waitForEvent(predicate: EventPredicate, options?: WaitForEventOptions): Promise<TestEvent>;
  /** Resolves once stderr (all of it so far) matches. */
  waitForStderr(pattern: RegExp | string, timeoutMs?: number): Promise<RegExpExecArray>;
  /** Resolves once stdout (all of it so far) matches: for `-o pretty`, whose lines are not events. */
  waitForStdout(pattern: RegExp | string, timeoutMs?: number): Promise<RegExpExecArray>;
  /** Resolves once the process has exited; rejects (without killing it) after the timeout. */
  waitForExit(timeoutMs?: number): Promise<ExitResult>;
  /** Sends `signal` (default SIGINT) and waits for the exit; after the timeout kills it and rejects. */
  stop(signal?: NodeJS.Signals, timeoutMs?: number): Promise<ExitResult>;
  /** Kills the process (SIGKILL) and waits for it. */
  kill(): Promise<ExitResult>;
  /** Resolves if no matching event arrives within `forMs`; rejects as soon as one does. */
  expectNoEvent(predicate: EventPredicate, forMs: number, options?: ExpectNoEventOptions): Promise<void>;
}

/** kubediff's line once the initial sync is over; the number of resource types watched is group 1. */
export const WATCHING = /kubediff: watching (\d+) resource types? on /;

/**
 * The arguments most tests start from: `kubediff watch` against the test cluster, JSON lines, one namespace,
 * these resource types, then `extra`.
 */
export function watchArgs(namespace: string, resources: readonly string[], ...extra: string[]): string[] {
  return [
    'watch',
    '--kubeconfig',
    testCluster().kubeconfigPath,
    '-o',
    'json',
    '-n',
    namespace,
    ...resources.flatMap((resource) => ['-r', resource]),
    ...extra,
  ];
}

/** Children not yet exited, killed on process exit. */
const running = new Map<ChildProcess, KubediffProcess>();
process.on('exit', () => {
  for (const child of running.keys()) child.kill('SIGKILL');
});

/** Kills every kubediff started by this helper that is still running, and waits until they are gone. */
export async function killAll(): Promise<void> {
  await Promise.all([...running.values()].map((proc) => proc.kill()));
}

/**
 * The environment of a kubediff child: this process's, without node --test's own variable, text logs
 * unless `extra` says otherwise, then `extra` (undefined deletes). For a test that spawns kubediff itself.
 */
export function kubediffEnv(extra?: RunOptions['env']): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  // Set by `node --test` for its own children; kubediff is not a test file.
  delete env.NODE_TEST_CONTEXT;
  // Tests read kubediff's human log lines; a test of the JSON format asks for it (src/util/log.ts).
  env.KUBEDIFF_LOG_FORMAT ??= 'text';
  for (const [key, value] of Object.entries(extra ?? {})) {
    if (value === undefined) delete env[key];
    else env[key] = value;
  }
  return env;
}

type Outcome<T> = { value: T } | { error: Error };

/** `describeEvent`, safe for a malformed line (failure messages must never throw). */
function summary(event: TestEvent): string {
  try {
    return describeEvent(event);
  } catch {
    return JSON.stringify(event);
  }
}

/** Starts kubediff with `args` and returns a handle to await its output. */
export function runKubediff(args: string[], options: RunOptions = {}): KubediffProcess {
  const defaultTimeout = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const script = options.command ?? options.script ?? KUBEDIFF_BIN;
  const child = spawn(options.command ?? process.execPath, options.command ? args : [script, ...args], {
    cwd: options.cwd,
    env: kubediffEnv(options.env),
    stdio: ['ignore', 'pipe', 'pipe'],
  });

  const events: TestEvent[] = [];
  const stdoutLines: string[] = [];
  /** Describes the first stdout line that is not an event, if any. */
  let badLine: string | undefined;
  let stdout = '';
  let stderr = '';
  let partial = '';
  let exitResult: ExitResult | undefined;
  const listeners = new Set<() => void>();
  const notify = (): void => {
    for (const listener of [...listeners]) listener();
  };

  const readLine = (line: string): void => {
    stdoutLines.push(line);
    const number = stdoutLines.length;
    let parsed: unknown;
    try {
      parsed = JSON.parse(line);
    } catch {
      badLine ??= `stdout line ${number} is not JSON (stdout must be JSON lines only): ${JSON.stringify(line)}`;
      return;
    }
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
      badLine ??= `stdout line ${number} is JSON but not an object: ${JSON.stringify(line)}`;
      return;
    }
    if (options.checkEvents) {
      const problems = contractViolations(parsed);
      if (problems.length > 0) {
        badLine ??= `stdout line ${number} breaks the event contract (${problems.join('; ')}): ${line}`;
        return;
      }
    }
    events.push(parsed as TestEvent);
  };

  child.stdout.setEncoding('utf8');
  child.stdout.on('data', (chunk: string) => {
    stdout += chunk;
    const lines = (partial + chunk).split('\n');
    partial = lines.pop() ?? '';
    for (const line of lines) readLine(line.endsWith('\r') ? line.slice(0, -1) : line);
    notify();
  });
  child.stdout.on('end', () => {
    if (partial !== '') readLine(partial);
    partial = '';
    notify();
  });
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (chunk: string) => {
    stderr += chunk;
    notify();
  });

  const finish = (code: number | null, signal: NodeJS.Signals | null): void => {
    if (exitResult !== undefined) return;
    exitResult = { code, signal, stdout, stderr };
    running.delete(child);
    notify();
  };
  child.on('close', (code, signal) => finish(code, signal));
  child.on('error', (error) => {
    // Spawning failed (no 'close' follows when there is no process) or a signal could not be sent.
    if (child.pid === undefined) {
      stderr += `\n[cli helper] could not start ${script}: ${error.message}\n`;
      finish(null, null);
    }
  });

  const exitText = (): string =>
    exitResult === undefined
      ? 'still running'
      : `exited with ${exitResult.signal === null ? `code ${exitResult.code}` : `signal ${exitResult.signal}`}`;

  const context = (): string => {
    const shown = events.slice(-EVENTS_IN_MESSAGES).map((event, index) => {
      const number = events.length - Math.min(events.length, EVENTS_IN_MESSAGES) + index;
      return `    #${number} ${summary(event)}`;
    });
    const skipped =
      events.length > EVENTS_IN_MESSAGES ? `    … ${events.length - EVENTS_IN_MESSAGES} earlier\n` : '';
    const tail = stderr.length > STDERR_TAIL_CHARS ? `…${stderr.slice(-STDERR_TAIL_CHARS)}` : stderr;
    return [
      `  command: kubediff ${args.join(' ')} (${exitText()})`,
      `  events seen (${events.length}):${events.length === 0 ? ' none' : `\n${skipped}${shown.join('\n')}`}`,
      `  stderr tail:${tail.trim() === '' ? ' (empty)' : `\n${tail.replace(/^/gm, '    ')}`}`,
    ].join('\n');
  };

  const failure = (headline: string): Error => new Error(`${headline}\n${context()}`);
  const timedOut = (headline: string): { error: Error } => ({ error: failure(headline) });

  /** Re-evaluates `poll` on every output or exit until it decides; after `timeoutMs`, `onTimeout` decides. */
  const waitFor = <T>(
    poll: () => Outcome<T> | undefined,
    timeoutMs: number,
    onTimeout: () => Outcome<T>,
    what: string,
  ): Promise<T> =>
    new Promise<T>((resolve, reject) => {
      let timer: NodeJS.Timeout | undefined;
      const settle = (outcome: Outcome<T>): void => {
        listeners.delete(check);
        clearTimeout(timer);
        if ('value' in outcome) resolve(outcome.value);
        else reject(outcome.error);
      };
      const check = (): void => {
        let outcome: Outcome<T> | undefined;
        try {
          outcome = poll();
        } catch (error) {
          // A predicate threw; it must not become an uncaught exception in a stream handler.
          const message = error instanceof Error ? error.message : String(error);
          outcome = { error: failure(`${what}: the predicate threw: ${message}`) };
        }
        if (outcome !== undefined) settle(outcome);
      };
      listeners.add(check);
      timer = setTimeout(() => settle(onTimeout()), timeoutMs);
      check();
    });

  /** Resolves once the whole of one output stream so far matches `pattern`. */
  const waitForOutput = (
    name: string,
    text: () => string,
    pattern: RegExp | string,
    timeoutMs: number,
  ): Promise<RegExpExecArray> => {
    const regex =
      typeof pattern === 'string'
        ? new RegExp(pattern.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
        : new RegExp(pattern.source, pattern.flags.replace(/[gy]/g, ''));
    const what = `${name} to match ${String(pattern instanceof RegExp ? pattern : JSON.stringify(pattern))}`;
    return waitFor<RegExpExecArray>(
      () => {
        const match = regex.exec(text());
        if (match !== null) return { value: match };
        if (exitResult !== undefined)
          return { error: failure(`waiting for ${what}: kubediff ${exitText()} first`) };
        return undefined;
      },
      timeoutMs,
      () => timedOut(`timed out after ${timeoutMs} ms waiting for ${what}`),
      `waiting for ${what}`,
    );
  };

  const handle: KubediffProcess = {
    args,
    pid: child.pid,
    events,
    stdoutLines,
    get stdout() {
      return stdout;
    },
    get stderr() {
      return stderr;
    },
    get exitResult() {
      return exitResult;
    },

    waitForEvent(predicate, waitOptions = {}) {
      const what = waitOptions.description ?? 'a matching event';
      const timeoutMs = waitOptions.timeoutMs ?? defaultTimeout;
      let next = waitOptions.since ?? 0;
      return waitFor<TestEvent>(
        () => {
          // Impure stdout fails every wait, even one whose event came before the bad line.
          if (badLine !== undefined) return { error: failure(`waiting for ${what}: ${badLine}`) };
          for (; next < events.length; next++) {
            const event = events[next]!;
            if (predicate(event)) return { value: event };
          }
          if (exitResult !== undefined)
            return { error: failure(`waiting for ${what}: kubediff ${exitText()} first`) };
          return undefined;
        },
        timeoutMs,
        () => timedOut(`timed out after ${timeoutMs} ms waiting for ${what}`),
        `waiting for ${what}`,
      );
    },

    waitForStderr(pattern, timeoutMs = defaultTimeout) {
      return waitForOutput('stderr', () => stderr, pattern, timeoutMs);
    },

    waitForStdout(pattern, timeoutMs = defaultTimeout) {
      return waitForOutput('stdout', () => stdout, pattern, timeoutMs);
    },

    waitForExit(timeoutMs = defaultTimeout) {
      return waitFor<ExitResult>(
        () => (exitResult === undefined ? undefined : { value: exitResult }),
        timeoutMs,
        () => timedOut(`timed out after ${timeoutMs} ms waiting for kubediff to exit`),
        'waiting for kubediff to exit',
      );
    },

    async stop(signal = 'SIGINT', timeoutMs = defaultTimeout) {
      if (exitResult !== undefined) return exitResult;
      child.kill(signal);
      try {
        return await handle.waitForExit(timeoutMs);
      } catch {
        await handle.kill();
        throw failure(`kubediff did not exit within ${timeoutMs} ms of ${signal}; killed it`);
      }
    },

    async kill() {
      if (exitResult === undefined) child.kill('SIGKILL');
      return handle.waitForExit(defaultTimeout);
    },

    expectNoEvent(predicate, forMs, noOptions = {}) {
      const what = noOptions.description ?? 'a matching event';
      let next = noOptions.since ?? events.length;
      return waitFor<void>(
        () => {
          if (badLine !== undefined) return { error: failure(`expecting no ${what}: ${badLine}`) };
          for (; next < events.length; next++) {
            const event = events[next]!;
            if (predicate(event)) {
              return {
                error: failure(`expected no ${what} for ${forMs} ms, got #${next}: ${summary(event)}`),
              };
            }
          }
          if (exitResult !== undefined) {
            return {
              error: failure(`expecting no ${what} for ${forMs} ms: kubediff ${exitText()} meanwhile`),
            };
          }
          return undefined;
        },
        forMs,
        // The window closed without a matching event: that is the success.
        () => ({ value: undefined }),
        `expecting no ${what}`,
      );
    },
  };
  running.set(child, handle);
  return handle;
}

/** Runs a command that exits on its own (`version`, `resources`, bad flags…); kills it if it outlives the timeout. */
export async function runKubediffToCompletion(args: string[], options: RunOptions = {}): Promise<ExitResult> {
  const proc = runKubediff(args, options);
  try {
    return await proc.waitForExit(options.timeoutMs ?? DEFAULT_TIMEOUT_MS);
  } catch (error) {
    await proc.kill();
    throw error;
  }
}
