// `kubediff history` and the UI's reader over the PostgreSQL state: every cluster's events, read-only,
// no claim (postgres-timeline-reader.ts queries through it).
import type pg from 'pg';
import type { KubediffEvent } from '../events/event.ts';
import type { ResourceType } from '../kube/types.ts';
import { formatDuration } from '../util/duration.ts';
import { KubediffError, UsageError } from '../util/errors.ts';
import { hasGlob } from '../util/glob.ts';
import { isCancelled, PostgresConnection, type PostgresStateOptions } from './postgres-connection.ts';
import { POSTGRES_SCHEMA_VERSION } from './postgres-migrations.ts';
import { DEFAULT_PAGE_SIZE, type HistoryPage, type HistoryQuery, type HistoryReader } from './store.ts';

/**
 * A reader's bound on one statement (`history`, the UI), enforced by the server: past it PostgreSQL cancels
 * the statement, which then stops using the shared database. A client-side timeout alone would only stop
 * waiting for it. The client's own bound comes READER_CLIENT_MARGIN_MS later, for a server that does not
 * answer at all.
 */
export const READ_STATEMENT_TIMEOUT_MS = 30_000;
const READER_CLIENT_MARGIN_MS = 5_000;

/**
 * `kubediff history` (and the UI's reader, postgres-timeline-reader.ts) over the database: every cluster's
 * events, no claim. Its connection reads in read-only transactions, and the server bounds each of its
 * statements (statementTimeoutMs, READ_STATEMENT_TIMEOUT_MS by default): a query past it is cancelled
 * there and fails with QueryTimeout; the connection stays.
 */
export class PostgresHistory extends PostgresConnection implements HistoryReader {
  private readonly statementTimeoutMs: number;

  private constructor(options: PostgresStateOptions, statementTimeoutMs: number) {
    super(options, statementTimeoutMs + READER_CLIENT_MARGIN_MS);
    this.statementTimeoutMs = statementTimeoutMs;
  }

  static async open(
    options: PostgresStateOptions,
    { statementTimeoutMs = READ_STATEMENT_TIMEOUT_MS }: { statementTimeoutMs?: number } = {},
  ): Promise<PostgresHistory> {
    const history = new PostgresHistory(options, Math.max(1, Math.floor(statementTimeoutMs)));
    let version: number;
    try {
      version = await history.run((client) => history.schemaVersion(client));
    } catch (error) {
      await history.close();
      throw history.unreachable(error);
    }
    if (version === 0) {
      await history.close();
      throw new UsageError(
        `${history.label} holds no kubediff state yet; run \`kubediff watch --state <this URL>\` first, or pass the URL it writes to.`,
      );
    }
    if (version !== POSTGRES_SCHEMA_VERSION) {
      await history.close();
      throw new UsageError(
        version < POSTGRES_SCHEMA_VERSION
          ? `the state in ${history.label} has an older schema (${version}); run \`kubediff migrate --state <this URL>\` first.`
          : `the state in ${history.label} was written by a newer kubediff (schema ${version}); upgrade kubediff.`,
      );
    }
    return history;
  }

  protected override async connected(client: pg.Client): Promise<void> {
    // Before any query: every transaction of this session read-only, every statement bounded by the server.
    await client.query(
      `SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY; SET statement_timeout = ${this.statementTimeoutMs}`,
    );
  }

  protected override async run<T>(work: (client: pg.Client) => Promise<T>): Promise<T> {
    try {
      return await super.run(work);
    } catch (error) {
      if (!isCancelled(error)) throw error;
      throw new QueryTimeout(
        `a history query ran longer than ${formatDuration(this.statementTimeoutMs)} and was cancelled by ${this.label}; narrow it (a shorter time window, fewer types or namespaces).`,
        { cause: error },
      );
    }
  }

  /**
   * Another read of the same database on this read-only, bounded connection (`kubediff fleet status`,
   * src/state/fleet-rows.ts).
   */
  read<T>(work: (client: pg.Client) => Promise<T>): Promise<T> {
    return this.run(work);
  }

  async history(query: HistoryQuery): Promise<HistoryPage> {
    const where: string[] = [];
    const params: unknown[] = [];
    const add = (clause: (n: string) => string, value: unknown) => {
      params.push(value);
      where.push(clause(`$${params.length}`));
    };
    if (query.clusters && query.clusters.length > 0) {
      // Names as equality (the (cluster, seq) index serves them), globs as LIKE patterns.
      const names = query.clusters.filter((cluster) => !hasGlob(cluster));
      const globs = query.clusters.filter(hasGlob).map(globToLike);
      const either: string[] = [];
      if (names.length > 0) {
        // One name as plain equality: the index then also yields the order, so a tail reads only its rows.
        params.push(names.length === 1 ? names[0] : names);
        either.push(
          names.length === 1 ? `cluster = $${params.length}` : `cluster = ANY ($${params.length}::text[])`,
        );
      }
      if (globs.length > 0) {
        params.push(globs);
        either.push(`cluster LIKE ANY ($${params.length}::text[])`);
      }
      where.push(either.length === 1 ? (either[0] as string) : `(${either.join(' OR ')})`);
    }
    if (query.namespace !== undefined) add((n) => `namespace = ${n}`, query.namespace);
    if (query.resource !== undefined) add((n) => `resource = ${n}`, query.resource);
    if (query.name !== undefined) add((n) => `name = ${n}`, query.name);
    if (query.since !== undefined) add((n) => `time >= ${n}::timestamptz`, query.since);
    // Who made it, from the stored event (no column of its own), as in the SQLite file.
    if (query.manager !== undefined)
      add(
        (n) =>
          `(EXISTS (SELECT 1 FROM json_array_elements(coalesce(event->'by'->'managers', '[]'::json)) m WHERE m->>'manager' LIKE ${n})` +
          ` OR EXISTS (SELECT 1 FROM json_array_elements(coalesce(event->'changes', '[]'::json)) c WHERE c->>'manager' LIKE ${n}))`,
        globToLike(query.manager),
      );
    if (query.user !== undefined)
      add(
        (n) =>
          `(event->'by'->'user'->>'username' LIKE ${n} OR event->'by'->'impersonatedUser'->>'username' LIKE ${n})`,
        globToLike(query.user),
      );
    // An OUTCOME's verdict, from the stored event (no column of its own).
    if (query.outcome !== undefined)
      add((n) => `type = 'OUTCOME' AND event->>'verdict' = ${n}`, query.outcome);
    const filter = () => (where.length > 0 ? ` WHERE ${where.join(' AND ')}` : '');
    let after = query.after;
    if (after === undefined && query.limit !== undefined) {
      // The newest `limit`: start just before the oldest of them.
      const row = await this.run((client) =>
        client.query<{ seq: string }>(
          `SELECT seq FROM kubediff_events${filter()} ORDER BY seq DESC OFFSET $${params.length + 1} LIMIT 1`,
          [...params, Math.max(0, Math.floor(query.limit ?? 1) - 1)],
        ),
      );
      after = row.rows[0] ? String(BigInt(row.rows[0].seq) - 1n) : '0';
    }
    if (after !== undefined) add((n) => `seq > ${n}::bigint`, after);
    const pageSize = Math.max(1, Math.floor(query.pageSize ?? DEFAULT_PAGE_SIZE));
    const result = await this.run((client) =>
      client.query<{ seq: string; event: KubediffEvent }>(
        `SELECT seq, event FROM kubediff_events${filter()} ORDER BY seq LIMIT ${pageSize}`,
        params,
      ),
    );
    const last = result.rows.at(-1);
    return {
      events: result.rows.map((row) => row.event),
      ...(result.rows.length === pageSize && last ? { next: last.seq } : {}),
    };
  }

  /** One read-only query of the UI's reader (postgres-timeline-reader.ts), on this connection. */
  async select<Row extends pg.QueryResultRow>(sql: string, params: readonly unknown[] = []): Promise<Row[]> {
    return (await this.run((client) => client.query<Row>(sql, [...params]))).rows;
  }

  async recordedTypes(): Promise<ResourceType[]> {
    const result = await this.run((client) =>
      client.query<{ type: ResourceType }>(
        'SELECT DISTINCT ON (resource) type FROM kubediff_resources ORDER BY resource',
      ),
    );
    return result.rows.map((row) => row.type);
  }

  async historyResources(): Promise<string[]> {
    const result = await this.run((client) =>
      client.query<{ resource: string }>('SELECT DISTINCT resource FROM kubediff_events'),
    );
    return result.rows.map((row) => row.resource);
  }
}

/** A reader's statement ran past its bound and the server cancelled it. */
export class QueryTimeout extends KubediffError {}

/** A --cluster glob as a LIKE pattern: `*` any run, `?` one character, LIKE's own wildcards escaped. */
function globToLike(glob: string): string {
  let pattern = '';
  for (const char of glob) {
    if (char === '*') pattern += '%';
    else if (char === '?') pattern += '_';
    else if (char === '%' || char === '_' || char === '\\') pattern += `\\${char}`;
    else pattern += char;
  }
  return pattern;
}
