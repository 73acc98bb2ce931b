// One collection of one resource type (all namespaces, or one), as a reflector reads it: pages of a LIST,
// and a WATCH from a resourceVersion. The reflector depends on this interface, not on the HTTP client
// (client-go's ListerWatcher plays the same part), so that its logic (410 relists, backoff, idle
// timeouts, bookmarks, flow control) can be tested without an API server; listerWatcherFor() is the
// real one, over a KubeClient.
import type { Readable } from 'node:stream';
import type { KubeClient, Query } from './client.ts';
import { KubeError } from './errors.ts';
import { collectionPath, type KubeObject, type ResourceType } from './types.ts';

export interface ListOptions {
  /** Objects per page, at most. */
  limit: number;
  /** Where the previous page ended. */
  continue?: string | undefined;
  /** Only the objects' metadata (PartialObjectMetadataList): to name an object too large to read. */
  metadataOnly?: boolean;
  signal: AbortSignal;
}

export interface ListPage {
  metadata?: { resourceVersion?: string; continue?: string };
  items?: KubeObject[];
  /** The size of the answer as read, for the page size to adapt to. */
  bytes: number;
}

export interface WatchOptions {
  /** Where to resume; '' with sendInitialEvents: the current state, read consistently. */
  resourceVersion: string;
  /**
   * A streaming list (WatchList): the server first sends the collection's objects as ADDED events,
   * then a BOOKMARK annotated `k8s.io/initial-events-end`, then goes on as a watch.
   */
  sendInitialEvents?: boolean;
  /** The server ends the watch after this long. */
  timeoutSeconds: number;
  /** How long to wait for the server to answer (the reflector decides when a silence means a dead watch). */
  idleTimeoutMs: number;
  signal: AbortSignal;
}

export interface ListerWatcher {
  /** For messages: the API server, and the collection's path on it. */
  readonly server: string;
  readonly path: string;
  /** The largest answer (a LIST page) or watch event read. */
  readonly maxReadBytes: number;
  /** One page of the LIST; a page larger than maxReadBytes rejects with ResponseTooLarge. */
  list(options: ListOptions): Promise<ListPage>;
  /**
   * The whole LIST in one request (no limit, the current state); resolves with its body once the server
   * answered, to be read item by item (src/kube/list-stream.ts): its size is not bounded, each item is.
   */
  listWhole(options: { signal: AbortSignal; idleTimeoutMs: number }): Promise<Readable>;
  /** Opens a WATCH (with bookmarks); resolves with its body, JSON lines, once the server answered. */
  watch(options: WatchOptions): Promise<Readable>;
}

/** Which objects of a resource type: one namespace, and the server-side selectors. */
export interface CollectionScope {
  namespace?: string | undefined;
  labelSelector?: string | undefined;
  fieldSelector?: string | undefined;
}

/** What reading a collection asks of the client. */
export type CollectionReader = Pick<KubeClient, 'server' | 'maxReadBytes' | 'getJSON' | 'openStream'>;

/** The collection of `type` in `scope`, read through `client`. */
export function listerWatcherFor(
  client: CollectionReader,
  type: ResourceType,
  scope: CollectionScope = {},
): ListerWatcher {
  const path = collectionPath(type, scope.namespace);
  const selectors: Query = { labelSelector: scope.labelSelector, fieldSelector: scope.fieldSelector };
  return {
    server: client.server,
    path,
    maxReadBytes: client.maxReadBytes,
    async list(options) {
      const response = await client.getJSON<Omit<ListPage, 'bytes'>>(path, {
        query: { ...selectors, limit: options.limit, continue: options.continue },
        ...(options.metadataOnly
          ? { headers: { accept: 'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1' } }
          : {}),
        signal: options.signal,
      });
      if (response.notModified) {
        throw new KubeError('server', `the API server answered a LIST of ${path} with 304`, { path });
      }
      return { ...response.body, bytes: response.bytes };
    },
    listWhole(options) {
      return client.openStream(path, {
        query: selectors,
        signal: options.signal,
        idleTimeoutMs: options.idleTimeoutMs,
      });
    },
    watch(options) {
      return client.openStream(path, {
        query: {
          ...selectors,
          watch: 1,
          allowWatchBookmarks: true,
          resourceVersion: options.resourceVersion,
          ...(options.sendInitialEvents
            ? { sendInitialEvents: true, resourceVersionMatch: 'NotOlderThan' }
            : {}),
          timeoutSeconds: options.timeoutSeconds,
        },
        signal: options.signal,
        idleTimeoutMs: options.idleTimeoutMs,
      });
    },
  };
}
