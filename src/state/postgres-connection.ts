// A connection to the PostgreSQL state (`--state postgres://…`), and what the recorder's store
// (postgres-store.ts), the history (postgres-history.ts) and the migrations (postgres-migrations.ts)
// share: the connection settings and time limits, the password file, which failures are transient, and
// one sentence for a database that cannot be reached.
//
// node-postgres (`pg`): pure JavaScript (no native build, nothing fetched besides npm), the most used and
// maintained PostgreSQL client for Node, with TLS, SCRAM, the PG* environment variables and ~/.pgpass.
import { readFileSync } from 'node:fs';
import pg from 'pg';
import type { Credentials } from '../util/credentials.ts';
import { errorMessage, KubediffError, UsageError } from '../util/errors.ts';
import { postgresLabel, stateCredentials } from './location.ts';
import { ClaimLost } from './store.ts';

/** 'KDif': the advisory lock class of kubediff's claims and migrations. */
export const LOCK_CLASS = 0x4b446966;

export interface PostgresStateOptions {
  /** postgres://[user@]host[:port]/database[?sslmode=…]; no password (PGPASSWORD, ~/.pgpass or passwordFile). */
  url: string;
  /** A file holding the password alone (a mounted Secret); re-read at every connection. */
  passwordFile?: string | undefined;
}

/**
 * Limits of a fleet's sessions (docs/fleets.md): a transaction left open by a process that was paused or
 * cut off mid-way is ended by the server, and its row locks released, after `idleInTransactionMs`. The
 * fleet's coordination (fleet-store.ts) bounds the rest too: a statement the server runs longer than
 * `statementTimeoutMs` is cancelled, a connection not made within `connectTimeoutMs` is given up, and
 * TCP keepalive probes a silent link after `keepAliveDelayMs`.
 */
export interface SessionLimits {
  idleInTransactionMs: number;
  statementTimeoutMs?: number;
  connectTimeoutMs?: number;
  keepAliveDelayMs?: number;
}

/**
 * A fleet's sessions end a transaction left open for half the replica timeout: a replica paused inside one
 * has released the cluster rows it locked before its clusters may be claimed.
 */
export function fleetSessionLimits(replicaTimeoutMs: number): SessionLimits {
  return { idleInTransactionMs: Math.max(1, Math.floor(replicaTimeoutMs / 2)) };
}

/** Time limits of one connection attempt and of one query: past them the store counts as down (transient). */
const CONNECT_TIMEOUT_MS = 10_000;
export const QUERY_TIMEOUT_MS = 30_000;

/** The password of a passwordFile, read at every connection (a rotated Secret needs no restart). */
function readPasswordFile(file: string): string {
  try {
    return readFileSync(file, 'utf8').replace(/\r?\n$/, '');
  } catch (error) {
    throw new UsageError(
      `cannot read the PostgreSQL password file ${file} (state.passwordFile): ${(error as NodeJS.ErrnoException).code ?? errorMessage(error)}; check the path and its permissions.`,
    );
  }
}

function connectionConfig(
  options: PostgresStateOptions,
  queryTimeoutMs: number,
  session: SessionLimits | undefined,
): pg.ClientConfig {
  let parsed: URL;
  try {
    parsed = new URL(options.url);
  } catch {
    throw new UsageError(
      'invalid --state URL: use postgres://user@host:5432/database (the password comes from PGPASSWORD, ~/.pgpass or state.passwordFile).',
    );
  }
  if (parsed.password || parsed.searchParams.has('password')) {
    throw new UsageError(
      `the --state URL for ${postgresLabel(options.url)} carries a password; remove it and give it in PGPASSWORD, a ~/.pgpass file (PGPASSFILE) or state.passwordFile, so that it is never on a command line or printed.`,
    );
  }
  return {
    connectionString: options.url,
    connectionTimeoutMillis: session?.connectTimeoutMs ?? CONNECT_TIMEOUT_MS,
    query_timeout: queryTimeoutMs,
    keepAlive: true,
    ...(session?.keepAliveDelayMs === undefined
      ? {}
      : { keepAliveInitialDelayMillis: session.keepAliveDelayMs }),
    application_name: 'kubediff',
    ...(session ? { idle_in_transaction_session_timeout: session.idleInTransactionMs } : {}),
    ...(session?.statementTimeoutMs === undefined ? {} : { statement_timeout: session.statementTimeoutMs }),
  };
}

/** Errors of the socket under a connection (Node's codes). */
const SOCKET_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
]);

/** A statement the server cancelled (statement_timeout, or pg_cancel_backend): the session is still sound. */
export function isCancelled(error: unknown): boolean {
  return (error as { code?: unknown } | undefined)?.code === '57014';
}

/** Whether `error` is the database being unreachable, restarting or slow (worth retrying). */
export function isTransientPostgresError(error: unknown): boolean {
  if (error instanceof ClaimLost || error instanceof UsageError) return false;
  const code = (error as { code?: unknown } | undefined)?.code;
  if (typeof code === 'string') {
    // 08: connection exception; 57P01-03: shutdown, crash, not accepting yet; 53300: too many connections;
    // 40001/40P01: serialization failure, deadlock (the transaction may simply be repeated).
    if (
      code.startsWith('08') ||
      /^57P0[123]$/.test(code) ||
      code === '53300' ||
      code === '40001' ||
      code === '40P01'
    )
      return true;
    if (SOCKET_CODES.has(code)) return true;
  }
  return /connection terminated|timeout|terminating connection|connection error|not queryable|Connection refused/i.test(
    errorMessage(error),
  );
}

/** node-postgres's own errors of a connection that broke, was closed, or had no answer in time. */
const CONNECTION_FAILED =
  /^(Connection terminated|Query read timeout|timeout expired|Client has encountered a connection error|Client was closed)/;

/**
 * A failure that leaves the connection in doubt, not to be used again (not even for a ROLLBACK, which would
 * wait as long again): the connection broke (SQLSTATE class 08; the server ending the session: 57P01-03,
 * 25P03), its socket failed, or no answer came in time (node-postgres's query read timeout). A statement
 * the server refused or cancelled leaves the session sound (a lock timeout under contention, a
 * serialization failure, a deadlock, a statement timeout): its transaction is rolled back, the connection kept.
 */
export function isConnectionInDoubt(error: unknown): boolean {
  const code = (error as { code?: unknown } | undefined)?.code;
  if (typeof code === 'string') {
    if (code.startsWith('08') || /^57P0[123]$/.test(code) || code === '25P03') return true;
    if (SOCKET_CODES.has(code)) return true;
  }
  return CONNECTION_FAILED.test(errorMessage(error));
}

/** A connection to the database, with what the store and the history share. */
export abstract class PostgresConnection {
  readonly label: string;
  protected readonly config: pg.ClientConfig;
  private readonly passwordFile: string | undefined;
  /** The password it sends: a server's error may quote it, and is scrubbed of it before it is said. */
  private readonly credentials: Credentials;
  protected client: pg.Client | undefined;
  /** Connections being opened (connecting, then connected()): dropping the connection ends them too. */
  private readonly opening = new Set<pg.Client>();
  /** The opening of the connection, which callers that come meanwhile share (one connection, never two). */
  private pending: Promise<pg.Client> | undefined;

  constructor(options: PostgresStateOptions, queryTimeoutMs = QUERY_TIMEOUT_MS, session?: SessionLimits) {
    this.config = connectionConfig(options, queryTimeoutMs, session);
    this.passwordFile = options.passwordFile;
    this.label = postgresLabel(options.url);
    this.credentials = stateCredentials({ path: options.url, passwordFile: options.passwordFile });
  }

  /** The connection, (re-)opened when needed; callers that ask while it opens get the same one. */
  protected connection(): Promise<pg.Client> {
    if (this.client) return Promise.resolve(this.client);
    if (!this.pending) {
      const opening = this.open();
      this.pending = opening;
      const settled = () => {
        if (this.pending === opening) this.pending = undefined;
      };
      opening.then(settled, settled);
    }
    return this.pending;
  }

  private async open(): Promise<pg.Client> {
    const client = new pg.Client(
      this.passwordFile ? this.withPassword(readPasswordFile(this.passwordFile)) : this.config,
    );
    // A connection that breaks between queries: forget it, the next query reconnects.
    client.on('error', () => {
      if (this.client === client) this.client = undefined;
    });
    this.opening.add(client);
    try {
      await client.connect();
      await this.connected(client);
      // Dropped while it opened (a fleet call's deadline passed): never to be used.
      if (!this.opening.has(client)) throw new Error('Connection terminated while it was being opened');
    } catch (error) {
      client.end().catch(() => undefined);
      throw error;
    } finally {
      this.opening.delete(client);
    }
    this.client = client;
    return client;
  }

  /**
   * The config with the password. node-postgres lets the connection string's fields win over the
   * config's, so the password goes into the (never printed) connection string itself.
   */
  private withPassword(password: string): pg.ClientConfig {
    const url = new URL(this.config.connectionString ?? '');
    url.password = encodeURIComponent(password);
    return { ...this.config, connectionString: url.href };
  }

  /** What a new connection does first (the writer claims its cluster). */
  protected async connected(_client: pg.Client): Promise<void> {}

  /** Runs `work` on the connection; a failure that leaves the connection in doubt drops it. */
  protected async run<T>(work: (client: pg.Client) => Promise<T>): Promise<T> {
    const client = await this.connection();
    try {
      return await work(client);
    } catch (error) {
      if (isConnectionInDoubt(error) && this.client === client) this.dropConnection();
      throw error;
    }
  }

  /**
   * Forgets the connection, and ends one still being opened: the next query opens another. Ending it
   * destroys its socket at once when a query is still waiting for an answer (a silent link), which ends
   * its transaction on the server.
   */
  protected dropConnection(): void {
    for (const client of this.releaseClients()) client.end().catch(() => undefined);
  }

  /** The connection and those being opened, no longer this one's. */
  private releaseClients(): pg.Client[] {
    const clients = [...(this.client ? [this.client] : []), ...this.opening];
    this.client = undefined;
    this.opening.clear();
    this.pending = undefined;
    return clients;
  }

  /**
   * Runs `work` in one transaction on the connection: committed, or rolled back when it throws. A
   * connection in doubt (no answer in time, broken) is not asked to roll back, which would wait as long
   * again: run() drops it, and that ends the transaction on the server.
   */
  protected async transaction<T>(work: (client: pg.Client) => Promise<T>): Promise<T> {
    return this.run(async (client) => {
      await client.query('BEGIN');
      try {
        const result = await work(client);
        await client.query('COMMIT');
        return result;
      } catch (error) {
        if (!isConnectionInDoubt(error)) await client.query('ROLLBACK').catch(() => undefined);
        throw error;
      }
    });
  }

  async close(): Promise<void> {
    await Promise.all(this.releaseClients().map((client) => client.end().catch(() => undefined)));
  }

  /** The schema version, 0 when kubediff's tables are not there. */
  protected async schemaVersion(client: pg.Client): Promise<number> {
    const exists = await client.query<{ found: string | null }>(
      `SELECT to_regclass('kubediff_schema') AS found`,
    );
    if (!exists.rows[0]?.found) return 0;
    const row = await client.query<{ version: number }>('SELECT version FROM kubediff_schema');
    return row.rows[0]?.version ?? 0;
  }

  /** Explains a failure to connect in one sentence (never the URL's user or the password). */
  protected unreachable(error: unknown): KubediffError {
    if (error instanceof KubediffError) return error;
    const message = this.credentials.scrub(errorMessage(error)).replace(/\.$/, '');
    const code = (error as { code?: string }).code;
    if (code === '28P01' || code === '28000')
      return new UsageError(
        `PostgreSQL at ${this.label} refused the credentials (${message}); check PGUSER and the password in PGPASSWORD, ~/.pgpass or state.passwordFile.`,
      );
    if (code === '3D000')
      return new UsageError(`${message} at ${this.label}; create the database or fix the --state URL.`);
    return new KubediffError(
      `cannot reach PostgreSQL at ${this.label}: ${message}; check that the database is running and reachable, and the --state URL.`,
      { cause: error },
    );
  }
}
