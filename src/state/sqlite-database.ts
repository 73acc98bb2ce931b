// The state file behind `--state` (docs/state.md): node:sqlite, recognised by its application_id, schema
// version in user_version, older versions migrated in place in one transaction (sqlite-migrations.ts).
// WAL: readers never block the writer; a kill -9 loses at most the transaction being written. The file
// holds every watched object (Secrets redacted): created 0600 before SQLite opens it (its -wal and -shm
// files take that mode).
import { closeSync, existsSync, openSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, resolve } from 'node:path';
import type { DatabaseSync as DatabaseSyncType, StatementSync } from 'node:sqlite';
import type { KubediffEvent } from '../events/event.ts';
import type { StoredObject } from '../informer/store.ts';
import type { ResourceType } from '../kube/types.ts';
import { errorMessage, UsageError } from '../util/errors.ts';
import { withoutExperimentalWarning } from '../util/experimental.ts';
import { isoTimestamp } from '../util/timestamp.ts';
import { historyConditions } from './sqlite-history-query.ts';
import { APPLICATION_ID, MIGRATIONS, SCHEMA_VERSION } from './sqlite-migrations.ts';
import {
  DEFAULT_PAGE_SIZE,
  type HistoryPage,
  type HistoryQuery,
  OBJECT_COLUMNS,
  type ObjectRow,
  type Retention,
  type SerializedWrite,
  type StateWrite,
  type StoredResource,
  serializeWrite,
  storedObjectOf,
} from './store.ts';

/**
 * node:sqlite is loaded on first use, and its ExperimentalWarning (printed by the Node 22 releases that
 * kubediff supports; Node 24.21 prints none) is silenced: that one warning only, everything else passes.
 */
let sqlite: typeof import('node:sqlite') | undefined;
function loadSqlite(): typeof import('node:sqlite') {
  sqlite ??= withoutExperimentalWarning(
    /SQLite/i,
    () => createRequire(import.meta.url)('node:sqlite') as typeof import('node:sqlite'),
  );
  return sqlite;
}

export type SqlParameter = string | number | null;

/** Creates `path` empty with mode 0600 (an empty file is an empty SQLite database); an existing file is left as it is. */
function createPrivately(path: string): void {
  try {
    closeSync(openSync(path, 'wx', 0o600));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
}

const RESET_HINT =
  'move it away or delete it to start afresh (the next run then takes a new silent baseline)';

export class SqliteDatabase {
  readonly path: string;
  private readonly db: DatabaseSyncType;
  private readonly statements = new Map<string, StatementSync>();

  private constructor(path: string, db: DatabaseSyncType) {
    this.path = path;
    this.db = db;
  }

  /**
   * Opens (creating it if needed) and migrates the state file. A file that is not a kubediff state
   * database, or is damaged, is a UsageError (exit 2) that says how to reset it.
   */
  static open(path: string, options: { readOnly?: boolean } = {}): SqliteDatabase {
    const { DatabaseSync } = loadSqlite();
    const folder = dirname(resolve(path));
    if (!existsSync(folder)) {
      throw new UsageError(
        `cannot create the state file ${path}: the directory ${folder} does not exist; create it or pass another --state path.`,
      );
    }
    let db: DatabaseSyncType;
    try {
      if (!options.readOnly) createPrivately(path);
      db = new DatabaseSync(path, { readOnly: options.readOnly ?? false, timeout: 5_000 });
    } catch (error) {
      throw new UsageError(`cannot open the state file ${path}: ${plain(error)}.`, { cause: error });
    }
    const state = new SqliteDatabase(path, db);
    try {
      state.prepareFile(options.readOnly ?? false);
    } catch (error) {
      db.close();
      if (error instanceof UsageError) throw error;
      const message = plain(error);
      if (/not a database|malformed|corrupt/i.test(message)) {
        throw new UsageError(
          `the state file ${path} is damaged or not a database (${message}); ${RESET_HINT}.`,
          {
            cause: error,
          },
        );
      }
      throw new UsageError(`cannot use the state file ${path}: ${message}.`, { cause: error });
    }
    return state;
  }

  private prepareFile(readOnly: boolean): void {
    const applicationId = this.pragma('application_id');
    const version = this.pragma('user_version');
    const tables = (
      this.db.prepare("SELECT count(*) AS n FROM sqlite_master WHERE type = 'table'").get() as { n: number }
    ).n;
    if (applicationId !== APPLICATION_ID && (applicationId !== 0 || tables > 0 || version !== 0)) {
      throw new UsageError(
        `the state file ${this.path} is an SQLite database of another application, not kubediff state; ` +
          `pass another --state path, or ${RESET_HINT}.`,
      );
    }
    if (version > SCHEMA_VERSION) {
      throw new UsageError(
        `the state file ${this.path} was written by a newer kubediff (schema ${version}, this one reads up to ${SCHEMA_VERSION}); ` +
          `upgrade kubediff, or ${RESET_HINT}.`,
      );
    }
    const check = this.db.prepare('PRAGMA quick_check').get() as Record<string, string> | undefined;
    const verdict = check ? Object.values(check)[0] : 'ok';
    if (verdict !== 'ok') throw new Error(`malformed: ${verdict}`);
    if (readOnly) {
      if (version < SCHEMA_VERSION && tables > 0) {
        throw new UsageError(
          `the state file ${this.path} has an older schema (${version}); run \`kubediff watch --state ${this.path}\` once to migrate it.`,
        );
      }
      return;
    }
    this.db.exec('PRAGMA journal_mode = WAL');
    // WAL + NORMAL: a commit is durable against a process crash (kill -9) at once, and against a power
    // loss from the next checkpoint; one fsync per checkpoint, not per transaction.
    this.db.exec('PRAGMA synchronous = NORMAL');
    if (version < SCHEMA_VERSION) {
      this.transaction(() => {
        if (applicationId === 0) this.db.exec(`PRAGMA application_id = ${APPLICATION_ID}`);
        for (let from = version; from < SCHEMA_VERSION; from++) this.db.exec(MIGRATIONS[from] ?? '');
        this.db.exec(`PRAGMA user_version = ${SCHEMA_VERSION}`);
      });
    }
  }

  close(): void {
    if (this.db.isOpen) this.db.close();
  }

  getMeta(key: string): string | undefined {
    const row = this.statement('SELECT value FROM meta WHERE key = ?').get(key) as
      | { value: string }
      | undefined;
    return row?.value;
  }

  setMeta(key: string, value: string): void {
    this.statement(
      'INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value',
    ).run(key, value);
  }

  resources(): StoredResource[] {
    const rows = this.statement(
      'SELECT resource, type, watched, listed, resource_version FROM resources',
    ).all() as {
      resource: string;
      type: string;
      watched: number;
      listed: number;
      resource_version: string;
    }[];
    return rows.map((row) => ({
      resource: row.resource,
      type: JSON.parse(row.type) as ResourceType,
      watched: row.watched === 1,
      listed: row.listed === 1,
      resourceVersion: row.resource_version,
    }));
  }

  /** The objects recorded for one resource type. */
  objects(resource: string): StoredObject[] {
    const rows = this.statement(`SELECT ${OBJECT_COLUMNS} FROM objects WHERE resource = ?`).all(
      resource,
    ) as unknown as ObjectRow[];
    return rows.map(storedObjectOf);
  }

  objectCount(resource?: string): number {
    const row = (
      resource === undefined
        ? this.statement('SELECT count(*) AS n FROM objects').get()
        : this.statement('SELECT count(*) AS n FROM objects WHERE resource = ?').get(resource)
    ) as { n: number };
    return row.n;
  }

  /** Records which types the server offers and which of them are watched; forgets the others. */
  private applyResources(entries: readonly { resource: string; json: string; watched: boolean }[]): void {
    const served = new Set(entries.map((entry) => entry.resource));
    for (const existing of this.resources()) {
      // Kept while objects remain: their DELETED events (with the type's kind and version) are still due.
      if (!served.has(existing.resource))
        this.statement(
          'DELETE FROM resources WHERE resource = ?1 AND NOT EXISTS (SELECT 1 FROM objects WHERE resource = ?1)',
        ).run(existing.resource);
    }
    const upsert = this.statement(
      `INSERT INTO resources (resource, type, watched) VALUES (?, ?, ?)
       ON CONFLICT (resource) DO UPDATE SET type = excluded.type, watched = excluded.watched,
         listed = CASE WHEN excluded.watched = 0 THEN 0 ELSE listed END`,
    );
    for (const entry of entries) upsert.run(entry.resource, entry.json, entry.watched ? 1 : 0);
  }

  /** How far a listed type is followed (followed-versions.ts). */
  markFollowed(resource: string, resourceVersion: string): void {
    this.statement('UPDATE resources SET resource_version = ? WHERE resource = ? AND listed = 1').run(
      resourceVersion,
      resource,
    );
  }

  /** A resource type's objects are a complete inventory as of this resourceVersion. */
  markListed(resource: string, resourceVersion: string): void {
    this.statement('UPDATE resources SET listed = 1, resource_version = ? WHERE resource = ?').run(
      resourceVersion,
      resource,
    );
  }

  /** Forgets how far every type is followed (followed-versions.ts). */
  forgetFollowed(): void {
    this.db.exec("UPDATE resources SET resource_version = ''");
  }

  /** Forgets every object of a resource type (no longer watched, or its state is being rebuilt). */
  forgetObjects(resource?: string): void {
    if (resource === undefined) {
      this.db.exec('DELETE FROM objects');
      this.db.exec('UPDATE resources SET listed = 0');
    } else {
      this.statement('DELETE FROM objects WHERE resource = ?').run(resource);
      this.statement('UPDATE resources SET listed = 0 WHERE resource = ?').run(resource);
    }
  }

  /** Applies a batch of writes in one transaction: one commit, one WAL append, whatever its size. */
  write(batch: readonly StateWrite[], after?: () => void): void {
    this.writeSerialized(batch.map(serializeWrite), after);
  }

  /** write(), for writes already serialized. */
  writeSerialized(batch: readonly SerializedWrite[], after?: () => void): void {
    if (batch.length === 0 && !after) return;
    const upsert = this.statement(
      `INSERT INTO objects (resource, key, namespace, name, uid, resource_version, object) VALUES (?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (resource, key) DO UPDATE SET namespace = excluded.namespace, name = excluded.name,
         uid = excluded.uid, resource_version = excluded.resource_version, object = excluded.object`,
    );
    const remove = this.statement('DELETE FROM objects WHERE resource = ? AND key = ?');
    const insertEvent = this.statement(
      'INSERT INTO events (id, time, type, resource, namespace, name, event, search) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
    );
    this.transaction(() => {
      for (const write of batch) {
        if (write.kind === 'object') {
          upsert.run(
            write.resource,
            write.key,
            write.namespace ?? null,
            write.name,
            write.uid,
            write.resourceVersion,
            write.json,
          );
        } else if (write.kind === 'delete') {
          remove.run(write.resource, write.key);
        } else if (write.kind === 'resources') {
          this.applyResources(write.entries);
        } else if (write.kind === 'forget') {
          this.forgetObjects(write.resource);
        } else {
          insertEvent.run(
            write.id,
            write.time,
            write.type,
            write.resource,
            write.namespace ?? null,
            write.name,
            write.json,
            write.search,
          );
        }
      }
      after?.();
    });
  }

  /** The recorded events matching `query`, oldest first (the newest `limit` of them), all pages. */
  history(query: HistoryQuery): KubediffEvent[] {
    const events: KubediffEvent[] = [];
    let page: HistoryPage;
    let after: string | undefined;
    do {
      page = this.historyPage({ ...query, ...(after !== undefined ? { after } : {}) });
      events.push(...page.events);
      after = page.next;
    } while (after !== undefined);
    return events;
  }

  /** One page of the recorded events matching `query`, oldest first (see HistoryQuery). */
  historyPage(query: HistoryQuery): HistoryPage {
    const { where, params } = historyConditions(query);
    let after = query.after === undefined ? undefined : Number(query.after);
    if (after === undefined && query.limit !== undefined) {
      // The newest `limit`: start just before the oldest of them.
      const row = this.db
        .prepare(
          `SELECT seq FROM events${where.length > 0 ? ` WHERE ${where.join(' AND ')}` : ''} ORDER BY seq DESC LIMIT 1 OFFSET ?`,
        )
        .get(...params, Math.max(0, Math.floor(query.limit) - 1)) as { seq: number } | undefined;
      after = row ? row.seq - 1 : 0; // fewer than `limit`: all of them
    }
    if (after !== undefined) {
      where.push('seq > ?');
      params.push(after);
    }
    const pageSize = Math.max(1, Math.floor(query.pageSize ?? DEFAULT_PAGE_SIZE));
    const sql = `SELECT seq, event FROM events${where.length > 0 ? ` WHERE ${where.join(' AND ')}` : ''} ORDER BY seq LIMIT ${pageSize}`;
    const rows = this.db.prepare(sql).all(...params) as { seq: number; event: string }[];
    const last = rows.at(-1);
    return {
      events: rows.map((row) => JSON.parse(row.event) as KubediffEvent),
      ...(rows.length === pageSize && last ? { next: String(last.seq) } : {}),
    };
  }

  /**
   * The rows of one read-only query, for the history readers (src/state/timeline-reader.ts): their
   * statements vary with the filters given, so they are prepared each time, not cached.
   */
  select<Row>(sql: string, ...params: SqlParameter[]): Row[] {
    return this.db.prepare(sql).all(...params) as Row[];
  }

  /** The resource names that events were recorded for (to resolve `history deploy`). */
  historyResources(): string[] {
    const rows = this.statement('SELECT DISTINCT resource FROM events').all() as { resource: string }[];
    return rows.map((row) => row.resource);
  }

  eventCount(): number {
    return (this.statement('SELECT count(*) AS n FROM events').get() as { n: number }).n;
  }

  /** Removes events beyond the retention limits; returns how many. */
  prune(retention: Retention, now: number = Date.now()): number {
    let removed = 0;
    this.transaction(() => {
      const cutoff = isoTimestamp(now - retention.maxAgeMs);
      removed += Number(this.statement('DELETE FROM events WHERE time < ?').run(cutoff).changes);
      const count = this.eventCount();
      if (count > retention.maxEvents) {
        removed += Number(
          this.statement('DELETE FROM events WHERE seq IN (SELECT seq FROM events ORDER BY seq LIMIT ?)').run(
            count - retention.maxEvents,
          ).changes,
        );
      }
    });
    // Size: drop the oldest tenth of the events until the live pages fit (freed pages are reused).
    for (let round = 0; round < 20 && this.usedBytes() > retention.maxSizeBytes; round++) {
      const count = this.eventCount();
      if (count === 0) break;
      removed += Number(
        this.statement('DELETE FROM events WHERE seq IN (SELECT seq FROM events ORDER BY seq LIMIT ?)').run(
          Math.max(1, Math.ceil(count / 10)),
        ).changes,
      );
    }
    return removed;
  }

  /** Bytes in use by the database's pages (not counting free pages). */
  usedBytes(): number {
    const pages = this.pragma('page_count') - this.pragma('freelist_count');
    return pages * this.pragma('page_size');
  }

  /** Moves the WAL's contents into the main file (at a clean stop, so that the file alone is complete). */
  checkpoint(): void {
    this.db.exec('PRAGMA wal_checkpoint(TRUNCATE)');
  }

  private transaction(work: () => void): void {
    this.db.exec('BEGIN IMMEDIATE');
    try {
      work();
      this.db.exec('COMMIT');
    } catch (error) {
      if (this.db.isTransaction) this.db.exec('ROLLBACK');
      throw error;
    }
  }

  private pragma(name: string): number {
    const row = this.db.prepare(`PRAGMA ${name}`).get() as Record<string, number> | undefined;
    return Number(row ? Object.values(row)[0] : 0);
  }

  private statement(sql: string): StatementSync {
    let statement = this.statements.get(sql);
    if (!statement) {
      statement = this.db.prepare(sql);
      this.statements.set(sql, statement);
    }
    return statement;
  }
}

function plain(error: unknown): string {
  return errorMessage(error).replace(/\.$/, '');
}
