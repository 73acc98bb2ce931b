// The server processes the test harness runs (the control plane, PostgreSQL, Kafka): each started in
// a process group of its own with its output in a log file, waited for, and stopped by signalling
// its group; killed with the Node process that started it, however that ends (guardGroup). Shared by
// test/helpers/cluster.ts, postgres.ts and kafka.ts.
import { type ChildProcess, spawn } from 'node:child_process';
import { closeSync, openSync, readdirSync, readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { constants as osConstants } from 'node:os';
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

/** Where a test server we started (PostgreSQL, Kafka) keeps its things; absent for an existing server. */
export interface ServerFiles {
  /** The server's temp folder (configuration, data, certificates, log). */
  dir?: string;
  logFile?: string;
  /** Process id of the server (the leader of its own process group). */
  pid?: number;
}

/** How a test server (PostgreSQL, Kafka) is started; see startPostgres() and startKafka(). */
export interface ServerOptions {
  /** Parent of the server's temp folder; default os.tmpdir(). */
  tmpRoot?: string;
  /** How long to wait for the server to be ready; each server has its default. */
  startTimeoutMs?: number;
  /** Extra server settings (they win over the defaults). */
  settings?: Record<string, string>;
  /** Whether stop() copies the server's log to .cache/test-artifacts/logs/<label>.log; default true. */
  keepLog?: boolean;
  /** Names the copied log; default <server>-<port>. */
  label?: string;
  /** Progress messages (one line each); default silent. */
  log?: (message: string) => void;
}

/**
 * Runs `start` again (up to 3 times in all) when it fails with PortInUseError: free ports are found by
 * binding port 0 and letting go, and another process can take one in between; fresh ports are the cure.
 */
export async function retryOnPortInUse<T>(
  what: string,
  start: () => Promise<T>,
  log: ((message: string) => void) | undefined,
): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await start();
    } catch (error) {
      if (!(error instanceof PortInUseError) || attempt >= 3) throw error;
      log?.(`${what}: a port was taken while starting (${error.component}); retrying with new ports`);
    }
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
    const guard = guardGroup(managed.pid);
    child.once('exit', () => guard.kill('SIGKILL'));
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
 * Kills the process group `pgid` should this Node process end without stopping it: killed by a signal it
 * leaves to its default (Ctrl-C or a SIGTERM to a benchmark's process group), by SIGKILL, or crashed, when
 * its 'exit' hook does not run. A shell in a session of its own (so that a signal to this process's group
 * spares it) waits for the end of a pipe only this process holds; the kernel closes it whenever this
 * process ends. Killed itself once the process it guards has exited.
 */
function guardGroup(pgid: number): ChildProcess {
  const guard = spawn(
    '/bin/sh',
    ['-c', 'read -r _; kill -KILL -"$1" 2>/dev/null', 'kubediff-test-guard', `${pgid}`],
    {
      detached: true,
      stdio: ['pipe', 'ignore', 'ignore'],
    },
  );
  guard.once('error', () => {}); // no shell: unguarded, as before
  // Neither the guard nor its pipe keeps this process alive.
  guard.unref();
  (guard.stdin as Socket | null)?.unref();
  return guard;
}

/**
 * Stops a process and anything left in its group: `signal` (SIGTERM unless the server wants another
 * for a quick clean stop), then SIGKILL after graceMs.
 */
export async function terminate(
  p: ManagedProcess,
  options: { signal?: NodeJS.Signals; graceMs?: number } = {},
): Promise<void> {
  // The process's descendants, found while it runs (an exited process's pid may be someone else's by
  // now): some leave its group (PostgreSQL's backends call setsid()), and once it is gone they belong
  // to init. A crash (SIGKILL) must take them too.
  const family = !p.exit && p.pid > 0 ? descendants(p.pid) : [];
  const killAll = () => {
    signalGroup(p.pid, 'SIGKILL');
    for (const pid of family) if (processAlive(pid)) signalProcess(pid, 'SIGKILL');
  };
  if (!p.exit && p.pid > 0) {
    if (options.signal === 'SIGKILL') killAll();
    else signalGroup(p.pid, options.signal ?? 'SIGTERM');
    // An unref'd timer: once the process has exited, the rest of its grace period must not keep Node alive.
    const exitedInTime = await Promise.race([
      p.exited.then(() => true),
      sleep(options.graceMs ?? 5_000, false, { ref: false }),
    ]);
    if (!exitedInTime) killAll();
    await p.exited;
  }
  // Whatever is left, waited for: a server started again at once must not find its predecessor's
  // children still holding its shared memory, files or ports.
  if (p.pid > 0) {
    killAll();
    const deadline = Date.now() + 5_000;
    while (family.some((pid) => processAlive(pid)) && Date.now() < deadline) await sleep(20);
  }
  liveProcessGroups.delete(p.pid);
}

/** Every process below `pid` in the process tree (Linux /proc; elsewhere none). */
function descendants(pid: number): number[] {
  if (process.platform !== 'linux') return [];
  const children = new Map<number, number[]>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      // pid (comm) state ppid ...; comm may hold spaces and parentheses: read after the last ')'.
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      children.set(ppid, [...(children.get(ppid) ?? []), Number(entry)]);
    } catch {
      // Gone meanwhile.
    }
  }
  const found: number[] = [];
  for (let queue = [pid], next = queue.pop(); next !== undefined; next = queue.pop()) {
    for (const child of children.get(next) ?? []) {
      found.push(child);
      queue.push(child);
    }
  }
  return found;
}

function signalGroup(pgid: number, signal: NodeJS.Signals): void {
  signalProcess(-pgid, signal);
}

function signalProcess(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(pid, signal);
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

/**
 * What a failed start throws, after `cleanUp` (stop the processes, remove the folder): a PortInUseError
 * when a process's log says a port was taken (see retryOnPortInUse), else the reason followed by the
 * last lines of each process's log.
 */
export async function startFailure(
  what: string,
  error: unknown,
  processes: ManagedProcess[],
  cleanUp: () => Promise<void>,
): Promise<Error> {
  const report = new Map<string, string>();
  for (const p of processes) {
    const text = await readFile(p.logFile, 'utf8').catch(() => '');
    report.set(p.name, lastLines(text, 30) || '(empty)');
  }
  await cleanUp();
  const message = error instanceof Error ? error.message : String(error);
  const busy = [...report].find(([, tail]) => /address already in use/i.test(tail));
  if (busy) return new PortInUseError(busy[0], message);
  const tails = [...report].map(([name, tail]) => `--- ${name} (last lines of its log) ---\n${tail}`);
  return new Error(`cannot start ${what}: ${message}\n${tails.join('\n')}`, { cause: error });
}

/** Whether a TCP connection to host:port is accepted now. */
export function tcpAccepts(hostPort: string): Promise<boolean> {
  const at = hostPort.lastIndexOf(':');
  const host = hostPort.slice(0, at).replace(/^\[(.*)\]$/, '$1');
  return new Promise((resolve) => {
    const socket = connect({ host, port: Number(hostPort.slice(at + 1)) });
    socket.setTimeout(2_000);
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('timeout', () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('error', () => resolve(false));
  });
}

export function lastLines(text: string, count: number): string {
  return text.trimEnd().split('\n').slice(-count).join('\n');
}

export interface CommandResult {
  /** Exit code; 128+n for signal n (e.g. after the timeout). */
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * Runs a short-lived command to its end (a client tool: psql, a Kafka console tool), with `input` on
 * its standard input, killed after timeoutMs. Never throws for a non-zero exit: the caller decides.
 */
export function runCommand(
  binary: string,
  args: string[],
  options: { env?: NodeJS.ProcessEnv; input?: string; timeoutMs?: number; cwd?: string } = {},
): Promise<CommandResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(binary, args, {
      env: options.env ?? process.env,
      cwd: options.cwd,
      stdio: ['pipe', 'pipe', 'pipe'],
      timeout: options.timeoutMs ?? 120_000,
      killSignal: 'SIGKILL',
    });
    const stdout: Buffer[] = [];
    const stderr: Buffer[] = [];
    child.stdout.on('data', (chunk: Buffer) => stdout.push(chunk));
    child.stderr.on('data', (chunk: Buffer) => stderr.push(chunk));
    child.stdin.on('error', () => {}); // a command that exits without reading its input
    child.stdin.end(options.input ?? '');
    child.once('error', (error) => reject(new Error(`cannot run ${binary}: ${error.message}`)));
    child.once('close', (code, signal) => {
      resolve({
        code: code ?? 128 + (signal ? (osConstants.signals[signal] ?? 0) : 0),
        stdout: Buffer.concat(stdout).toString('utf8'),
        stderr: Buffer.concat(stderr).toString('utf8'),
      });
    });
  });
}
