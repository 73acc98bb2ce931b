// The SQLite state file (sqlite-database.ts) behind the StateStore and HistoryReader interfaces. SQLite is
// synchronous and local: every call completes at once, and no failure of it is transient (a full or
// read-only disk stays so), so the recorder stops recording at the first one.
import type { StoredObject } from '../informer/store.ts';
import type { ResourceType } from '../kube/types.ts';
import { SqliteDatabase } from './sqlite-database.ts';
import type {
  HistoryPage,
  HistoryQuery,
  HistoryReader,
  Retention,
  SerializedWrite,
  StateStore,
  StoredResource,
} from './store.ts';

export class SqliteStateStore implements StateStore, HistoryReader {
  readonly database: SqliteDatabase;
  private readonly readOnly: boolean;

  constructor(database: SqliteDatabase, options: { readOnly?: boolean } = {}) {
    this.database = database;
    this.readOnly = options.readOnly ?? false;
  }

  /** Opens (creating and migrating it if needed) the file; a foreign or damaged file is a UsageError. */
  static open(path: string, options: { readOnly?: boolean } = {}): SqliteStateStore {
    return new SqliteStateStore(SqliteDatabase.open(path, options), options);
  }

  get label(): string {
    return this.database.path;
  }

  async getMeta(key: string): Promise<string | undefined> {
    return this.database.getMeta(key);
  }

  async setMeta(key: string, value: string): Promise<void> {
    this.database.setMeta(key, value);
  }

  async resources(): Promise<StoredResource[]> {
    return this.database.resources();
  }

  async objects(resource: string): Promise<StoredObject[]> {
    return this.database.objects(resource);
  }

  async forgetObjects(): Promise<void> {
    this.database.forgetObjects();
  }

  async forgetFollowed(): Promise<void> {
    this.database.forgetFollowed();
  }

  async write(
    batch: readonly SerializedWrite[],
    listed: ReadonlyMap<string, string>,
    followed: ReadonlyMap<string, string> = new Map(),
  ): Promise<void> {
    this.database.writeSerialized(batch, () => {
      for (const [resource, resourceVersion] of listed) this.database.markListed(resource, resourceVersion);
      for (const [resource, resourceVersion] of followed)
        this.database.markFollowed(resource, resourceVersion);
    });
  }

  async prune(retention: Retention): Promise<number> {
    return this.database.prune(retention);
  }

  isTransient(): boolean {
    return false;
  }

  async history(query: HistoryQuery): Promise<HistoryPage> {
    return this.database.historyPage(query);
  }

  async recordedTypes(): Promise<ResourceType[]> {
    return this.database.resources().map((entry) => entry.type);
  }

  async historyResources(): Promise<string[]> {
    return this.database.historyResources();
  }

  async close(): Promise<void> {
    try {
      // The WAL moved into the file at a clean stop, so that the file alone is complete.
      if (!this.readOnly) this.database.checkpoint();
    } finally {
      this.database.close();
    }
  }
}
