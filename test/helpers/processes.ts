// The server processes the test harness runs (the control plane, PostgreSQL, Kafka): each started in
// a process group of its own with its output in a log file, waited for, and stopped by signalling
// its group. Shared by test/helpers/cluster.ts, postgres.ts and kafka.ts.
import { type ChildProcess, spawn } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

/** A server could not listen: another process took one of its free ports in between. */
export class PortInUseError extends Error {
  readonly component: string;
  constructor(component: string, message: string) {
    super(message);
    this.component = component;
  }
}

export interface ManagedProcess {
  name: string;
  binary: string;
  pid: number;
  logFile: string;
  child: ChildProcess;
  exited: Promise<void>;
  /** Set once the process has exited. */
  exit?: { code: number | null; signal: NodeJS.Signals | null };
  spawnError?: Error;
}

export interface LaunchOptions {
  /** Names the log file (`<dir>/<name>.log`, appended to, so a restarted server keeps one log). */
  name: string;
  binary: string;
  args: string[];
  /** Working folder and home of the log file. */
  dir: string;
  /** Outlive this Node process (npm run cluster:up). Default false: killed when this process exits. */
  persistent?: boolean;
  env?: NodeJS.ProcessEnv;
  /** Run as this user and group (a server that refuses to run as root: PostgreSQL). */
  uid?: number;
  gid?: number;
}

/** Process groups this Node process started and has not stopped yet: killed if it exits first. */
const liveProcessGroups = new Set<number>();
let exitHookInstalled = false;

export function launchProcess(options: LaunchOptions): ManagedProcess {
  const { name, binary, args, dir } = options;
  const logFile = path.join(dir, `${name}.log`);
  const out = openSync(logFile, 'a');
  // detached: a process group (and session) of its own, so that stopping can signal the group, and
  // so that a Ctrl-C meant for the test runner does not kill the server under its feet.
  const child = spawn(binary, args, {
    detached: true,
    stdio: ['ignore', out, out],
    cwd: dir,
    env: options.env ?? process.env,
    ...(options.uid === undefined ? {} : { uid: options.uid }),
    ...(options.gid === undefined ? {} : { gid: options.gid }),
  });
  closeSync(out);
  const managed: ManagedProcess = {
    name,
    binary,
    pid: child.pid ?? -1,
    logFile,
    child,
    exited: new Promise((resolve) => {
      child.once('error', (error) => {
        managed.spawnError = error;
        managed.exit ??= { code: null, signal: null };
        resolve();
      });
      child.once('exit', (code, signal) => {
        managed.exit = { code, signal };
        resolve();
      });
    }),
  };
  if (options.persistent) {
    child.unref();
  } else if (managed.pid > 0) {
    liveProcessGroups.add(managed.pid);
    if (!exitHookInstalled) {
      exitHookInstalled = true;
      process.once('exit', () => {
        for (const pgid of liveProcessGroups) signalGroup(pgid, 'SIGKILL');
      });
    }
  }
  return managed;
}

/**
 * Stops a process and anything left in its group: `signal` (SIGTERM unless the server wants another
 * for a quick clean stop), then SIGKILL after graceMs.
 */
export async function terminate(
  p: ManagedProcess,
  options: { signal?: NodeJS.Signals; graceMs?: number } = {},
): Promise<void> {
  if (!p.exit && p.pid > 0) {
    signalGroup(p.pid, options.signal ?? 'SIGTERM');
    const exitedInTime = await Promise.race([
      p.exited.then(() => true),
      sleep(options.graceMs ?? 5_000, false),
    ]);
    if (!exitedInTime) signalGroup(p.pid, 'SIGKILL');
    await p.exited;
  }
  // Anything the process left in its group (servers such as PostgreSQL have children).
  if (p.pid > 0) signalGroup(p.pid, 'SIGKILL');
  liveProcessGroups.delete(p.pid);
}

function signalGroup(pgid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pgid, signal);
  } catch {
    // ESRCH: already gone.
  }
}

// ---------------------------------------------------------------------------------------------------
// Processes started by another Node process (npm run cluster:up / cluster:down)

/** Whether `pid` is a live process (not a zombie), optionally running `binary`. */
export function processAlive(pid: number, binary?: string): boolean {
  try {
    process.kill(pid, 0);
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
  if (process.platform !== 'linux') return true;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // pid (comm) STATE ...; comm may contain spaces and parentheses, so look after the last ')'.
    const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
    if (state === 'Z' || state === 'X') return false;
    if (binary) {
      const argv0 = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')[0] ?? '';
      return path.basename(argv0) === path.basename(binary);
    }
  } catch {
    return false;
  }
  return true;
}

/** Stops the process group led by `pid` (SIGTERM, then SIGKILL after graceMs), by polling. */
export async function stopProcessGroup(pid: number, graceMs = 5_000): Promise<void> {
  signalGroup(pid, 'SIGTERM');
  const deadline = Date.now() + graceMs;
  while (processAlive(pid) && Date.now() < deadline) await sleep(100);
  signalGroup(pid, 'SIGKILL');
  const killDeadline = Date.now() + 5_000;
  while (processAlive(pid) && Date.now() < killDeadline) await sleep(100);
}

// ---------------------------------------------------------------------------------------------------
// Waiting and reporting

/** `count` TCP ports on 127.0.0.1 that were free a moment ago (bound to port 0, then let go). */
export async function freePorts(count: number): Promise<number[]> {
  const servers: Server[] = [];
  try {
    const ports: number[] = [];
    for (let i = 0; i < count; i++) {
      const server = createServer();
      servers.push(server);
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(0, '127.0.0.1', resolve);
      });
      const address = server.address();
      if (address === null || typeof address === 'string') throw new Error('no TCP port');
      ports.push(address.port);
    }
    return ports;
  } finally {
    await Promise.all(servers.map((s) => new Promise((resolve) => s.close(resolve))));
  }
}

/**
 * Polls `check` until it returns true; fails at once when one of `processes` exits (or could not be
 * started), and at the deadline with the last answer `check` gave.
 */
export async function waitUntil(
  what: string,
  check: () => Promise<true | string>,
  options: { deadline: number; processes: ManagedProcess[]; intervalMs?: number },
): Promise<void> {
  let last = 'not tried yet';
  for (;;) {
    for (const p of options.processes) {
      if (p.spawnError) throw new Error(`${p.name} could not be started: ${p.spawnError.message}`);
      if (p.exit) {
        const how = p.exit.signal ? `signal ${p.exit.signal}` : `code ${p.exit.code}`;
        throw new Error(`${p.name} exited with ${how} while waiting for ${what}`);
      }
    }
    try {
      const result = await check();
      if (result === true) return;
      last = result;
    } catch (error) {
      last = error instanceof Error ? `${error.message}${causeCode(error)}` : String(error);
    }
    if (Date.now() >= options.deadline) throw new Error(`timed out waiting for ${what} (last: ${last})`);
    await sleep(options.intervalMs ?? 250);
  }
}

function causeCode(error: Error): string {
  const cause = error.cause as { code?: unknown } | undefined;
  return cause && typeof cause.code === 'string' ? ` (${cause.code})` : '';
}

/** The last 30 lines of each process's log, by process name. */
export async function processReport(processes: ManagedProcess[]): Promise<Map<string, string>> {
  const report = new Map<string, string>();
  for (const p of processes) {
    const text = await readFile(p.logFile, 'utf8').catch(() => '');
    report.set(p.name, lastLines(text, 30) || '(empty)');
  }
  return report;
}

/** A start failure as one Error: the reason, then the tail of each process's log. */
export function startFailure(
  what: string,
  message: string,
  report: Map<string, string>,
  cause: unknown,
): Error {
  const tails = [...report].map(([name, tail]) => `--- ${name} (last lines of its log) ---\n${tail}`);
  return new Error(`cannot start ${what}: ${message}\n${tails.join('\n')}`, { cause });
}

export function lastLines(text: string, count: number): string {
  return text.trimEnd().split('\n').slice(-count).join('\n');
}
