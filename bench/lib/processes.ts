// Child processes of the benchmark: started with pipes, read line by line with the time each line
// arrived, measured from /proc (CPU seconds, resident memory), stopped by their own pid. Short-lived
// commands run under GNU time, the one way to learn the peak RSS of a process that has exited.
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';

/** What stays of a child's stderr: its tail is enough for errors, and a chatty child (the Go
 * original logs every event there too) must not grow the benchmark's own memory. */
const STDERR_KEPT = 256 * 1024;

export interface Child {
  process: ChildProcess;
  pid: number;
  stderr(): string;
  /** Resolves once stderr matches. */
  waitForStderr(pattern: RegExp, timeoutMs: number): Promise<void>;
  stop(): Promise<void>;
}

export function startChild(
  command: string,
  args: string[],
  options: {
    onLine?: (line: string, at: number) => void;
    env?: NodeJS.ProcessEnv;
  } = {},
): Child {
  const child = spawn(command, args, {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: options.env ?? process.env,
  });
  if (child.pid === undefined) throw new Error(`cannot start ${command}`);
  let stderr = '';
  const listeners = new Set<() => void>();
  child.stderr!.setEncoding('utf8');
  child.stderr!.on('data', (text: string) => {
    stderr += text;
    if (stderr.length > 2 * STDERR_KEPT) stderr = stderr.slice(-STDERR_KEPT);
    for (const listener of [...listeners]) listener();
  });
  if (child.stdout) {
    child.stdout.setEncoding('utf8');
    let pending = '';
    child.stdout.on('data', (text: string) => {
      const at = performance.now();
      const lines = (pending + text).split('\n');
      pending = lines.pop()!;
      for (const line of lines) if (line) options.onLine?.(line, at);
    });
  }
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return {
    process: child,
    pid: child.pid,
    stderr: () => stderr,
    waitForStderr: (pattern, timeoutMs) =>
      new Promise<void>((resolve, reject) => {
        const check = () => {
          if (!pattern.test(stderr)) return;
          cleanup();
          resolve();
        };
        const timer = setTimeout(() => {
          cleanup();
          reject(
            new Error(
              `${command} ${args.join(' ')}: no ${pattern} on stderr within ${timeoutMs} ms:\n${stderr.slice(-2000)}`,
            ),
          );
        }, timeoutMs);
        const onExit = () => {
          cleanup();
          reject(new Error(`${command} exited before printing ${pattern}:\n${stderr.slice(-2000)}`));
        };
        const cleanup = () => {
          clearTimeout(timer);
          listeners.delete(check);
          child.off('exit', onExit);
        };
        listeners.add(check);
        child.once('exit', onExit);
        check();
      }),
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
        await exited;
        clearTimeout(timer);
      }
    },
  };
}

const CLOCK_TICKS = 100;

/** CPU seconds (user + system) a live process has used so far. */
export function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // Fields 14 and 15 of stat (utime, stime), counted from the state field (3).
  return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
}

/** Resident memory now and at its peak, in bytes. */
export function memory(pid: number): { rss: number; peakRss: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kib = (name: string) =>
    Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? Number.NaN) * 1024;
  return { rss: kib('VmRSS'), peakRss: kib('VmHWM') };
}

const GNU_TIME = '/usr/bin/time';
const MAXRSS_TAG = 'bench-maxrss-kib';

export interface TimedRun {
  /** From just before the spawn to the end of its output and its exit. */
  ms: number;
  /** Peak resident memory, bytes (GNU time's maximum resident set size). */
  peakRss: number;
  stdout: string;
}

/**
 * Runs a command to its end under GNU time: wall time as seen from here, peak RSS as the kernel
 * counted it. Throws unless it exits 0.
 */
export function timedRun(command: string, args: string[], env: NodeJS.ProcessEnv = process.env) {
  if (!existsSync(GNU_TIME))
    throw new Error(
      `${GNU_TIME} is missing: the start-up figures read a short command's peak memory with GNU time; install it (Debian and Ubuntu: apt-get install time).`,
    );
  return new Promise<TimedRun>((resolve, reject) => {
    const started = performance.now();
    const child = spawn(GNU_TIME, ['-f', `${MAXRSS_TAG} %M`, command, ...args], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env,
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8');
    child.stderr.setEncoding('utf8');
    child.stdout.on('data', (text: string) => (stdout += text));
    child.stderr.on('data', (text: string) => (stderr += text));
    child.once('error', reject);
    child.once('close', (code) => {
      const ms = performance.now() - started;
      const kib = new RegExp(`^${MAXRSS_TAG} (\\d+)$`, 'm').exec(stderr)?.[1];
      if (code !== 0 || kib === undefined) {
        reject(new Error(`${command} ${args.join(' ')} exited ${code}: ${stderr.slice(-1000)}`));
        return;
      }
      resolve({ ms, peakRss: Number(kib) * 1024, stdout });
    });
  });
}
