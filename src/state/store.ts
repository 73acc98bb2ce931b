// What the recorder and `kubediff history` need from a state store, whatever holds it: an SQLite file
// (sqlite-store.ts over sqlite-database.ts) or a PostgreSQL database shared by many processes
// (postgres-store.ts). One recorder (recorder.ts) drives either.
//
// Every write goes through one ordered queue of SerializedWrites and is applied in batches, one
// transaction each, so a store that is unreachable for a while (PostgreSQL) only delays the queue: the
// recorder keeps it, within its byte bound, and retries.
import type { KubediffEvent, Verdict } from '../events/event.ts';
import { eventJson } from '../events/event-json.ts';
import type { StoredObject } from '../informer/store.ts';
import type { JsonObject, ResourceType } from '../kube/types.ts';
import { KubediffError } from '../util/errors.ts';
import { searchTextOf } from './search-text.ts';

export interface StoredResource {
  resource: string;
  type: ResourceType;
  watched: boolean;
  listed: boolean;
  /**
   * Listed: how far its objects are followed (every change up to it committed): a resourceVersion, or
   * with -n a JSON object of one per namespace (followed-versions.ts); '' if not known.
   */
  resourceVersion: string;
}

/** A served type and whether it is watched, as the recorder notes each discovery. */
export interface ResourceEntry {
  type: ResourceType;
  resource: string;
  watched: boolean;
}

/** One unit of a batch, applied in order. */
export type StateWrite =
  | { kind: 'object'; resource: string; object: StoredObject }
  | DeleteWrite
  | { kind: 'event'; resource: string; event: KubediffEvent };

/** An object's row removed. */
export interface DeleteWrite {
  kind: 'delete';
  resource: string;
  key: string;
}

/**
 * A StateWrite with its JSON made: the rows it writes, and nothing else. The recorder holds writes in
 * this form while sinks deliver, so that what it holds is exactly what it accounts for (a whole object
 * would also keep alive every version the informer's store has since replaced). `resources` and
 * `forget` are the recorder's notes of a discovery, queued in order with the rest.
 */
export type SerializedWrite =
  | {
      kind: 'object';
      resource: string;
      key: string;
      namespace: string | undefined;
      name: string;
      uid: string;
      resourceVersion: string;
      json: string;
    }
  | DeleteWrite
  | {
      kind: 'event';
      resource: string;
      id: string;
      time: string;
      type: string;
      namespace: string | undefined;
      name: string;
      json: string;
      /** What the history's search looks in (search-text.ts). */
      search: string;
    }
  | { kind: 'resources'; entries: readonly { resource: string; json: string; watched: boolean }[] }
  | { kind: 'forget'; resource: string };

/** Serializes `write`; throws what JSON.stringify throws (an object nested too deep for it). */
export function serializeWrite(write: StateWrite): SerializedWrite {
  if (write.kind === 'delete') return write;
  if (write.kind === 'object') {
    const { key, namespace, name, uid, resourceVersion, object } = write.object;
    return {
      kind: 'object',
      resource: write.resource,
      key,
      namespace,
      name,
      uid,
      resourceVersion,
      json: JSON.stringify(object),
    };
  }
  const { event } = write;
  return {
    kind: 'event',
    resource: write.resource,
    id: event.id,
    time: event.time,
    type: event.type,
    namespace: event.object.namespace,
    name: event.object.name,
    json: eventJson(event),
    search: searchTextOf(event),
  };
}

/** An object's row, as both stores keep it (the columns of their objects tables). */
export interface ObjectRow {
  key: string;
  namespace: string | null;
  name: string;
  uid: string;
  resource_version: string;
  object: string;
}

/** The columns of ObjectRow, in a SELECT's order. */
export const OBJECT_COLUMNS = 'key, namespace, name, uid, resource_version, object';

/** A recorded object as the informer's store holds it. */
export function storedObjectOf(row: ObjectRow): StoredObject {
  return {
    key: row.key,
    namespace: row.namespace ?? undefined,
    name: row.name,
    uid: row.uid,
    resourceVersion: row.resource_version,
    object: JSON.parse(row.object) as JsonObject,
  };
}

export interface Retention {
  /** Events older than this are removed. */
  maxAgeMs: number;
  /** At most this many events are kept (the newest). */
  maxEvents: number;
  /** The store is kept under about this many bytes by removing the oldest events. */
  maxSizeBytes: number;
}

export const DEFAULT_RETENTION: Retention = {
  maxAgeMs: 7 * 24 * 3_600_000,
  maxEvents: 100_000,
  maxSizeBytes: 256 * 1024 * 1024,
};

export interface HistoryQuery {
  /** Cluster names, or globs over them (`prod-*`): events of any of them. */
  clusters?: readonly string[] | undefined;
  namespace?: string | undefined;
  /** Qualified resource name (deployments.apps, pods). */
  resource?: string | undefined;
  name?: string | undefined;
  /** ISO time: only events at or after it. */
  since?: string | undefined;
  /**
   * Only events made by a field manager matching this glob (`*`, `?`): one in `by.managers` or on a change.
   * Read from the stored event JSON, so it needs no column of its own.
   */
  manager?: string | undefined;
  /**
   * Only changes made by this user (a glob), as the audit webhook named them in the stored event's
   * `by.user` or `by.impersonatedUser`.
   */
  user?: string | undefined;
  /** Only OUTCOMEs with this verdict (docs/outcomes.md), read from the stored event's JSON. */
  outcome?: Verdict | undefined;
  /** The newest this many. */
  limit?: number | undefined;
  /** At most this many events per page (default 1,000). */
  pageSize?: number | undefined;
  /** A page's `next`: the page after it. */
  after?: string | undefined;
}

/** One page of history: events oldest first; `next` asks for the following page when there may be one. */
export interface HistoryPage {
  /** Changes and OUTCOMEs, as recorded. */
  events: KubediffEvent[];
  next?: string;
}

export const DEFAULT_PAGE_SIZE = 1_000;

/** The read side: `kubediff history` and the UI query history through this alone. */
export interface HistoryReader {
  /** Where the history is, safe to print (a file path, or a database URL without credentials). */
  readonly label: string;
  history(query: HistoryQuery): Promise<HistoryPage>;
  /** The types recorded (with their discovery), and the resource names events were recorded for. */
  recordedTypes(): Promise<ResourceType[]>;
  historyResources(): Promise<string[]>;
  close(): Promise<void>;
}

/** The recorder's side of a store, for one cluster (a file holds one; a database one snapshot per cluster). */
export interface StateStore {
  readonly label: string;
  getMeta(key: string): Promise<string | undefined>;
  setMeta(key: string, value: string): Promise<void>;
  resources(): Promise<StoredResource[]>;
  /** The objects recorded for one resource type. */
  objects(resource: string): Promise<StoredObject[]>;
  /** Forgets every object (the recorded state no longer compares). */
  forgetObjects(): Promise<void>;
  /** Forgets how far every type is followed (written by a kubediff that meant something else by it). */
  forgetFollowed(): Promise<void>;
  /**
   * Applies a batch in one transaction, then marks `listed` types (resource → resourceVersion) as a complete
   * inventory, and sets how far listed types are `followed` (resource → resourceVersion: every change up
   * to it is committed; followed-versions.ts). Throws on failure, having applied nothing.
   */
  write(
    batch: readonly SerializedWrite[],
    listed: ReadonlyMap<string, string>,
    followed?: ReadonlyMap<string, string>,
  ): Promise<void>;
  /** Removes events beyond the retention limits; returns how many. */
  prune(retention: Retention): Promise<number>;
  /** A failure worth retrying (the database unreachable, restarting, timing out); else recording stops. */
  isTransient(error: unknown): boolean;
  /** After the last write: make the store complete on its own (SQLite's checkpoint), release it. */
  close(): Promise<void>;
}

/**
 * A store shared by several processes (PostgreSQL): the process that records a cluster claims it. Under
 * --leader-elect the claim follows the Lease (the recorder claims on taking over, releases on standing
 * by); without it, the store is opened claimed and a second claimant is refused.
 */
export interface ClaimedStateStore extends StateStore {
  /** Claims the cluster; false while another session holds it. */
  claim(): Promise<boolean>;
  /** Ends the session holding the claim (a previous leader gone without the database noticing). */
  fence(): Promise<number>;
  /** Gives the claim up. */
  release(): Promise<void>;
  /** The recorded objects' resourceVersions by key, for one resource type. */
  objectVersions(resource: string): Promise<Map<string, string>>;
}

export function isClaimed(store: StateStore): store is ClaimedStateStore {
  return 'claim' in store;
}

/** The connection was lost and another process claimed the cluster meanwhile. */
export class ClaimLost extends KubediffError {}
