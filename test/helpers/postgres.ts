// A real PostgreSQL server for the tests: the machine's PostgreSQL server binaries (Debian's
// postgresql-15, installed by .ci/run), initdb'd into a fresh temp folder and listening on a free
// 127.0.0.1 port with password (SCRAM) authentication and TLS, tuned for throw-away data (no fsync).
//
// scripts/run-tests.ts starts one per `npm test` run when a selected test file needs it and describes
// it to the test processes as a JSON PostgresInfo (see postgres-env.ts). A test that stops and restarts
// the database (churn, catch-up) starts its own with startPostgres(): `stopServer()`/`startServer()`
// (a RestartableServer, server-process.ts) keep its data folder and port.
//
// PostgreSQL refuses to run as root: as root, the server runs as the unprivileged `postgres` user that
// Debian's package creates (or $KUBEDIFF_TEST_POSTGRES_OS_USER), and its folder belongs to that user.
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync } from 'node:fs';
import { chown, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { makeTestPki } from './pki.ts';
import {
  freePorts,
  launchProcess,
  type ManagedProcess,
  retryOnPortInUse,
  runCommand,
  type ServerFiles,
  type ServerOptions,
  startFailure,
  terminate,
  waitUntil,
} from './processes.ts';
import { type RestartableServer, ServerProcess } from './server-process.ts';

/** Everything a test needs to reach the server; JSON-serialisable. */
export interface PostgresInfo extends ServerFiles {
  /** true for a server given by KUBEDIFF_TEST_POSTGRES_URL: nothing was started, nothing will be stopped. */
  external: boolean;
  /** postgres://user:password@host:port/database of a user who may create databases (our own: a superuser). */
  url: string;
  host: string;
  port: number;
  user: string;
  password: string;
  /** The database of `url` (our own server: `postgres`). */
  database: string;
  /** The server's version, as `SHOW server_version` answers. */
  version: string;
  /** Folder of the client programs (psql) when known; else psql is looked up on PATH. */
  binDir?: string;
  /** PEM of the CA of the server's certificate (our own server: TLS on, for sslmode=verify-full). */
  caPem?: string;
  caFile?: string;
}

/** stopServer() is a fast shutdown: clients are disconnected. */
export type RunningPostgres = PostgresInfo & RestartableServer;

/** startTimeoutMs: default 60 s; settings: `-c name=value` server settings; label: default postgres-<port>. */
export type StartPostgresOptions = ServerOptions;

const SUPERUSER = 'kubediff';
/**
 * Settings for throw-away data: nothing waits for the disk. A commit still reaches the operating system
 * before it is acknowledged (synchronous_commit stays on), so a server killed by a test (a crash) loses
 * nothing it acknowledged; only a crash of the machine would.
 */
const FAST_SETTINGS: Record<string, string> = {
  fsync: 'off',
  full_page_writes: 'off',
  // Many test files at once, each with a pool; the default 100 is tight.
  max_connections: '200',
  timezone: 'UTC',
  log_timezone: 'UTC',
};

interface PostgresBinaries {
  binDir: string;
  /** The major version, from the folder name or pg_config. */
  major: string;
}

/**
 * The server binaries: $KUBEDIFF_TEST_POSTGRES_BIN (a folder with postgres and initdb), else the newest
 * /usr/lib/postgresql/<major>/bin (Debian, Ubuntu), else the folder `pg_config --bindir` names.
 */
export function findPostgresBinaries(env: NodeJS.ProcessEnv = process.env): PostgresBinaries {
  const hint =
    'install the PostgreSQL server (Debian: apt-get install postgresql-15; .ci/run does), or set KUBEDIFF_TEST_POSTGRES_BIN to its bin folder';
  const usable = (dir: string) =>
    existsSync(path.join(dir, 'postgres')) && existsSync(path.join(dir, 'initdb'));
  const explicit = env.KUBEDIFF_TEST_POSTGRES_BIN;
  if (explicit) {
    if (!usable(explicit)) {
      throw new Error(`KUBEDIFF_TEST_POSTGRES_BIN=${explicit} holds no postgres and initdb; ${hint}.`);
    }
    return { binDir: path.resolve(explicit), major: 'unknown' };
  }
  const debianRoot = '/usr/lib/postgresql';
  const majors = existsSync(debianRoot)
    ? readdirSync(debianRoot)
        .filter((name) => /^\d+$/.test(name) && usable(path.join(debianRoot, name, 'bin')))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  if (majors[0]) return { binDir: path.join(debianRoot, majors[0], 'bin'), major: majors[0] };
  try {
    const binDir = execFileSync('pg_config', ['--bindir'], { encoding: 'utf8' }).trim();
    if (usable(binDir)) return { binDir, major: 'unknown' };
  } catch {
    // No pg_config: fall through to the error.
  }
  throw new Error(`cannot find the PostgreSQL server binaries; ${hint}.`);
}

/** The user to run the server as: undefined when we are not root (we run it ourselves). */
function serverAccount(
  env: NodeJS.ProcessEnv = process.env,
): { name: string; uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const name = env.KUBEDIFF_TEST_POSTGRES_OS_USER || 'postgres';
  try {
    const uid = Number(
      execFileSync('id', ['-u', name], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }),
    );
    const gid = Number(
      execFileSync('id', ['-g', name], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }),
    );
    if (uid === 0) throw new Error('is root');
    return { name, uid, gid };
  } catch {
    throw new Error(
      `PostgreSQL refuses to run as root and the user ${name} to run it as does not exist (or is root): install postgresql-15, which creates \`postgres\`, or set KUBEDIFF_TEST_POSTGRES_OS_USER to an unprivileged user.`,
    );
  }
}

/** Starts a PostgreSQL server of our own; see the file comment. */
export async function startPostgres(options: StartPostgresOptions = {}): Promise<RunningPostgres> {
  return retryOnPortInUse('postgres', () => startOwnPostgres(options), options.log);
}

async function startOwnPostgres(options: StartPostgresOptions): Promise<RunningPostgres> {
  const log = options.log ?? (() => {});
  const startedAt = performance.now();
  const timeoutMs = options.startTimeoutMs ?? 60_000;
  const { binDir } = findPostgresBinaries();
  const account = serverAccount();
  const asServer = account ? { uid: account.uid, gid: account.gid } : {};
  const tmpRoot = options.tmpRoot ?? tmpdir();
  await mkdir(tmpRoot, { recursive: true });
  const dir = await mkdtemp(path.join(tmpRoot, 'kubediff-postgres-'));
  const owned = async (file: string) => {
    if (account) await chown(file, account.uid, account.gid);
  };
  await owned(dir);
  const dataDir = path.join(dir, 'data');
  const [port] = (await freePorts(1)) as [number];
  const password = randomBytes(18).toString('hex');
  const processes: ManagedProcess[] = [];

  const settings = {
    ...FAST_SETTINGS,
    listen_addresses: '127.0.0.1',
    port: String(port),
    // TCP only: a Unix socket would need a folder the server may write to, and no test needs one.
    unix_socket_directories: '',
    ssl: 'on',
    ssl_cert_file: path.join(dir, 'server.crt'),
    ssl_key_file: path.join(dir, 'server.key'),
    ...options.settings,
  };
  const launchServer = async () => {
    const p = launchProcess({
      name: 'postgres',
      binary: path.join(binDir, 'postgres'),
      args: [
        '-D',
        dataDir,
        ...Object.entries(settings).flatMap(([name, value]) => ['-c', `${name}=${value}`]),
      ],
      dir,
      ...asServer,
    });
    processes.splice(0, processes.length, p);
    await waitUntil(
      `PostgreSQL to accept connections on 127.0.0.1:${port}`,
      async () => {
        const ready = await runCommand(path.join(binDir, 'pg_isready'), [
          '-q',
          '-h',
          '127.0.0.1',
          '-p',
          String(port),
        ]);
        return ready.code === 0 || `pg_isready exit code ${ready.code}`;
      },
      { deadline: Date.now() + timeoutMs, processes, intervalMs: 100 },
    );
    return p;
  };
  // SIGINT is PostgreSQL's fast shutdown (SIGTERM would wait for every client to leave); SIGKILL a
  // crash, recovered from the WAL at the next start.
  const server = new ServerProcess({ dir, launch: launchServer, stopSignal: 'SIGINT', graceMs: 10_000 });

  try {
    // The superuser's password goes to initdb in a file (not on a command line).
    const passwordFile = path.join(dir, 'password');
    await writeFile(passwordFile, `${password}\n`, { mode: 0o600 });
    await owned(passwordFile);
    const pki = makeTestPki();
    const caFile = path.join(dir, 'ca.crt');
    await writeFile(caFile, pki.caPem);
    await writeFile(settings.ssl_cert_file, pki.serverCert);
    // The server insists that its key is private to it.
    await writeFile(settings.ssl_key_file, pki.serverKey, { mode: 0o600 });
    await owned(settings.ssl_key_file);

    log(`postgres: initdb in ${dataDir}`);
    const initdb = launchProcess({
      name: 'initdb',
      binary: path.join(binDir, 'initdb'),
      args: [
        '-D',
        dataDir,
        '-U',
        SUPERUSER,
        `--pwfile=${passwordFile}`,
        '--auth=scram-sha-256',
        '--encoding=UTF8',
        '--no-locale',
        '--no-sync',
        '--no-instructions',
      ],
      dir,
      ...asServer,
    });
    processes.push(initdb);
    await initdb.exited;
    if (initdb.spawnError || initdb.exit?.code !== 0) {
      throw new Error(`initdb failed (${initdb.spawnError?.message ?? `exit code ${initdb.exit?.code}`})`);
    }
    await rm(passwordFile, { force: true });

    log(`postgres: starting on 127.0.0.1:${port}`);
    await server.start();
    const logFile = path.join(dir, 'postgres.log');
    const info: PostgresInfo & { logFile: string } = {
      external: false,
      url: postgresUrl({ host: '127.0.0.1', port, user: SUPERUSER, password, database: 'postgres' }),
      host: '127.0.0.1',
      port,
      user: SUPERUSER,
      password,
      database: 'postgres',
      version: '',
      binDir,
      caPem: pki.caPem,
      caFile,
      dir,
      logFile,
      pid: server.pid,
    };
    info.version = (await psql(info, 'SHOW server_version')).trim();
    log(
      `postgres: ${info.version} ready in ${((performance.now() - startedAt) / 1000).toFixed(1)}s at ${info.host}:${port}`,
    );
    return server.controls(info, options, `postgres-${port}`);
  } catch (error) {
    throw await startFailure('PostgreSQL', error, processes, async () => {
      for (const p of processes) await terminate(p, { signal: 'SIGINT' });
      await rm(dir, { recursive: true, force: true });
    });
  }
}

export function postgresUrl(
  parts: Pick<PostgresInfo, 'host' | 'port' | 'user' | 'password' | 'database'>,
): string {
  const url = new URL('postgres://localhost');
  url.hostname = parts.host;
  url.port = String(parts.port);
  url.username = parts.user;
  url.password = parts.password;
  url.pathname = `/${parts.database}`;
  return url.href;
}

/** The parts of a postgres:// (or postgresql://) URL, for an existing server (KUBEDIFF_TEST_POSTGRES_URL). */
export function parsePostgresUrl(text: string): Omit<PostgresInfo, 'external' | 'version'> {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new Error(
      'KUBEDIFF_TEST_POSTGRES_URL is not a URL: write it as postgres://user:password@host:port/database.',
    );
  }
  if (url.protocol !== 'postgres:' && url.protocol !== 'postgresql:') {
    throw new Error(
      `KUBEDIFF_TEST_POSTGRES_URL has scheme ${url.protocol}; write it as postgres://user:password@host:port/database.`,
    );
  }
  return {
    url: url.href,
    host: url.hostname.replace(/^\[(.*)\]$/, '$1') || '127.0.0.1',
    port: url.port ? Number(url.port) : 5432,
    user: decodeURIComponent(url.username),
    password: decodeURIComponent(url.password),
    database: decodeURIComponent(url.pathname.slice(1)) || 'postgres',
  };
}

/**
 * Runs SQL with psql (the server's own client, so that the harness does not choose a Node client for
 * the features) as the info's user, in `database` (default the info's), stopping at the first error.
 * The URL's sslmode and sslrootcert apply.
 * Resolves to psql's unaligned output: one line per row, columns separated by `|`.
 */
export async function psql(
  info: Pick<PostgresInfo, 'host' | 'port' | 'user' | 'password' | 'database' | 'binDir' | 'url'>,
  sql: string,
  options: { database?: string } = {},
): Promise<string> {
  const binary =
    info.binDir && existsSync(path.join(info.binDir, 'psql')) ? path.join(info.binDir, 'psql') : 'psql';
  // The connection through libpq's environment: the password stays off the command line.
  const query = new URL(info.url).searchParams;
  const sslmode = query.get('sslmode');
  const sslrootcert = query.get('sslrootcert');
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    PGHOST: info.host,
    PGPORT: String(info.port),
    PGUSER: info.user,
    PGPASSWORD: info.password,
    PGDATABASE: options.database ?? info.database,
    PGCONNECT_TIMEOUT: '10',
    ...(sslmode ? { PGSSLMODE: sslmode } : {}),
    ...(sslrootcert ? { PGSSLROOTCERT: sslrootcert } : {}),
  };
  const result = await runCommand(binary, ['-X', '-q', '-A', '-t', '-v', 'ON_ERROR_STOP=1', '-f', '-'], {
    env,
    input: sql,
    timeoutMs: 60_000,
  });
  if (result.code !== 0) {
    throw new Error(
      `psql on ${info.host}:${info.port}/${env.PGDATABASE} failed (exit code ${result.code}): ${result.stderr.trim()}`,
    );
  }
  return result.stdout;
}
