// Watches every selected resource type of one cluster, and keeps that set in
// step with what the server offers: a dynamic informer factory driven by
// discovery. New CRDs and aggregated APIs are picked up within seconds
// (their definitions are watched and trigger a re-discovery), and a periodic
// re-discovery is the backstop. A type that disappears has its informer
// stopped and its remaining objects reported as deleted. A CRD whose schema
// changes (served-schemas.ts) has its type read again, so that what the API
// server now serves differently is reported (Informer.servedSchemaChanged).

import type { DiscoveredResource, Discovery } from '../kube/discovery.ts';
import { KubeError, type KubeFailureKind } from '../kube/errors.ts';
import type { ListProgress } from '../kube/list-pager.ts';
import { type CollectionReader, listerWatcherFor } from '../kube/lister-watcher.ts';
import { rbacHint } from '../kube/rbac-hint.ts';
import { type Selection, type SelectionOptions, selectResources } from '../kube/selection.ts';
import {
  type JsonObject,
  type KubeObject,
  objectKey,
  qualifiedName,
  type ResourceType,
} from '../kube/types.ts';
import { sleep } from '../util/backoff.ts';
import { plural } from '../util/count-text.ts';
import { formatDuration } from '../util/duration.ts';
import { errorMessage } from '../util/errors.ts';
import type { EventFailures } from '../util/event-failures.ts';
import type { Logger } from '../util/log.ts';
import { Informer, type InformerHandler, type InitialListMode } from './informer.ts';
import { Reflector, type ReflectorState, type ReflectorTiming } from './reflector.ts';
import { ServedSchemas } from './served-schemas.ts';
import type { StoredObject } from './store.ts';

/** A type answered 429 (throttled) is warned about only once it has been so for this long. */
const THROTTLED_QUIET_MS = 10_000;
export interface ClusterWatcherOptions {
  /** The cluster: every informer reads its collection through this client. */
  client: CollectionReader;
  discovery: Pick<Discovery, 'discover'>;
  selection: SelectionOptions;
  /** -n: watch only these namespaces (one informer per namespace and type). */
  namespaces: readonly string[];
  /** --exclude-namespace: filtered by the server with a field selector. */
  excludeNamespaces: readonly string[];
  labelSelector?: string | undefined;
  /** Turns an object of a resource type into what is stored and compared (see InformerOptions). */
  normalize: (type: ResourceType, object: KubeObject) => JsonObject;
  /** --initial: report existing objects as ADDED at startup. */
  initial: boolean;
  /** Read managedFields to tell who changed an object (default true; see InformerOptions.fieldManagers). */
  fieldManagers?: boolean;
  handler: InformerHandler;
  log: Logger;
  timing?: Partial<ReflectorTiming>;
  /** Backstop re-discovery interval. */
  rediscoveryIntervalMs?: number;
  /** Called after each (re-)discovery with what is watched and skipped. */
  onSelection?: (selection: Selection) => void;
  /** Where each informer reports an object it cannot process (see InformerOptions.failures). */
  failures?: EventFailures;
  /** Backpressure from the output: informers pause reading while it returns a promise (see Reflector). */
  flowControl?: () => Promise<void> | undefined;
  /** --state: how each informer starts (pre-loaded store, catch-up) given what it would do without state. */
  planInformer?: (
    type: ResourceType,
    namespace: string | undefined,
    initialList: InitialListMode,
  ) => { initialList: InitialListMode; preload?: StoredObject[]; preloadPartial?: true; replayFrom?: string };
}

/** Failures that concern the connection to the API server, not one resource. */
const CONNECTION_FAILURES: ReadonlySet<KubeFailureKind> = new Set(['network', 'tls', 'unauthorized']);

const DEFAULT_REDISCOVERY_MS = 5 * 60_000;
/** Discovery can lag a moment behind a CRD becoming Established: look again shortly after. */
const FOLLOW_UP_REFRESH_MS = [400, 3_000];

const CRD_TYPE: ResourceType = {
  group: 'apiextensions.k8s.io',
  version: 'v1',
  resource: 'customresourcedefinitions',
  kind: 'CustomResourceDefinition',
  namespaced: false,
  verbs: ['list', 'watch'],
  shortNames: [],
  singularName: 'customresourcedefinition',
  categories: [],
};

const TRIGGER_TYPES: ResourceType[] = [
  CRD_TYPE,
  {
    group: 'apiregistration.k8s.io',
    version: 'v1',
    resource: 'apiservices',
    kind: 'APIService',
    namespaced: false,
    verbs: ['list', 'watch'],
    shortNames: [],
    singularName: 'apiservice',
    categories: [],
  },
];

export class ClusterWatcher {
  private readonly options: ClusterWatcherOptions;
  private readonly informers = new Map<string, Informer[]>();
  /**
   * The informers by group and kind (what an ownerReference names), for findObject, which runs for
   * every event; built on first use after the set of informers changed.
   */
  private byKind: Map<string, Informer[]> | undefined;
  private readonly triggers: Reflector[] = [];
  /** What decides how each CRD's objects are served, to tell when it changes. */
  private readonly servedSchemas = new ServedSchemas();
  private readonly abort = new AbortController();
  private readonly reported = new Map<Informer, string>();
  private readonly disconnected = new Set<Informer>();
  /** Informers answered 429 since they last watched, and since when (see reportState). */
  private readonly throttledSince = new Map<Informer, number>();
  /** Since the connection was lost: whether a watch has resumed (the others may stop instead). */
  private resumedSinceOutage = false;
  private refreshing: Promise<void> | undefined;
  private refreshAgain = false;
  private started = false;
  private starting: Promise<Selection | undefined> | undefined;
  private loops: Promise<void>[] = [];
  private pendingFollowUps = new Set<Promise<void>>();

  constructor(options: ClusterWatcherOptions) {
    this.options = options;
  }

  /**
   * Discovers, starts every informer and resolves when each has either
   * completed its first LIST or reported why it cannot. stop() may be called
   * at any moment meanwhile: start() then starts nothing more and resolves
   * with undefined (or rejects, if the discovery it interrupted does).
   */
  start(): Promise<Selection | undefined> {
    this.starting ??= this.startOnce();
    return this.starting;
  }

  private async startOnce(): Promise<Selection | undefined> {
    const selection = await this.discoverAndSelect();
    if (this.abort.signal.aborted) return undefined;
    this.applySelection(selection, this.options.initial ? 'added' : 'silent');
    this.started = true;
    await Promise.all(this.allInformers().map((informer) => informer.waitUntilSettled()));
    if (this.abort.signal.aborted) return undefined;
    this.startTriggers();
    this.loops.push(this.periodicRediscovery());
    return selection;
  }

  /**
   * Stops everything, also in the middle of start(); resolves when no timer or handler call is left and
   * every LIST and WATCH has ended. A discovery that start() is still waiting for is not awaited: a
   * request still connecting reports its abort only once the connection attempt is over (up to the
   * connect timeout on a dead link), and its answer is ignored anyway; KubeClient.close() ends it.
   */
  async stop(): Promise<void> {
    this.abort.abort();
    await Promise.all([
      ...this.allInformers().map((informer) => informer.stop()),
      ...this.triggers.map((trigger) => trigger.stop()),
      ...this.loops,
      ...this.pendingFollowUps,
      this.refreshing,
    ]);
  }

  /**
   * The last known state of an object named by group, kind, namespace and name (what an ownerReference
   * says), from the informers' stores; undefined when its type is not watched or it is not known.
   */
  findObject(
    group: string,
    kind: string,
    namespace: string | undefined,
    name: string,
  ): StoredObject | undefined {
    const key = objectKey(namespace ? { namespace, name } : { name });
    this.byKind ??= indexByKind(this.informers.values());
    for (const informer of this.byKind.get(kindKey(group, kind)) ?? []) {
      if (informer.namespace !== undefined && informer.namespace !== namespace) continue;
      const found = informer.get(key);
      if (found) return found;
    }
    return undefined;
  }

  allInformers(): Informer[] {
    return [...this.informers.values()].flat();
  }

  /** Re-discovers now (coalescing concurrent calls) and starts or stops informers to match. */
  refresh(): Promise<void> {
    if (this.refreshing) {
      this.refreshAgain = true;
      return this.refreshing;
    }
    this.refreshing = (async () => {
      do {
        this.refreshAgain = false;
        try {
          const selection = await this.discoverAndSelect();
          if (this.abort.signal.aborted) return;
          await this.applySelectionAndRetire(selection);
        } catch (error) {
          if (!this.abort.signal.aborted) this.reportRediscoveryFailure(error);
        }
      } while (this.refreshAgain && !this.abort.signal.aborted);
    })().finally(() => {
      this.refreshing = undefined;
    });
    return this.refreshing;
  }

  /** A lost connection is reported once, by the watches (reportState): here it is only a debug line. */
  private reportRediscoveryFailure(error: unknown): void {
    const message = `re-discovery failed: ${errorMessage(error)}; retrying later.`;
    if (error instanceof KubeError && CONNECTION_FAILURES.has(error.kind)) this.options.log.debug(message);
    else this.options.log.warn(message);
  }

  private async discoverAndSelect(): Promise<Selection> {
    const result = await this.options.discovery.discover(this.abort.signal);
    for (const failed of result.failedGroups) {
      this.options.log.warn(`discovery of ${failed.group}/${failed.version} failed: ${failed.reason}`);
    }
    const selection = selectResources(result.resources, this.options.selection);
    this.options.onSelection?.(selection);
    return selection;
  }

  private applySelection(selection: Selection, initialList: InitialListMode): void {
    for (const type of selection.watched) {
      const key = qualifiedName(type);
      if (this.informers.has(key)) continue;
      const informers = this.informersFor(type, initialList);
      this.informers.set(key, informers);
      this.byKind = undefined;
      for (const informer of informers) informer.start();
      if (this.started) this.options.log.info(`watching new resource type ${key}`);
    }
  }

  private async applySelectionAndRetire(selection: Selection): Promise<void> {
    // A type that appears while running is new: everything already in it is reported as added.
    this.applySelection(selection, 'added-offline');
    const wanted = new Set(selection.watched.map(qualifiedName));
    for (const [key, informers] of this.informers) {
      if (wanted.has(key)) continue;
      this.informers.delete(key);
      this.byKind = undefined;
      await Promise.all(informers.map((informer) => informer.stop()));
      for (const informer of informers) {
        informer.flushAsDeleted();
        this.reported.delete(informer);
        this.leaveOutage(informer, false);
      }
      this.options.log.info(`stopped watching ${key}: the API server no longer serves it`);
    }
  }

  private informersFor(type: DiscoveredResource, initialList: InitialListMode): Informer[] {
    const common = {
      type,
      normalize: this.options.normalize,
      initialList,
      timing: this.options.timing ?? {},
      flowControl: this.options.flowControl,
      failures: this.options.failures,
      fieldManagers: this.options.fieldManagers,
    };
    const handler: InformerHandler = {
      onAdd: (...args) => this.options.handler.onAdd(...args),
      onUpdate: (...args) => this.options.handler.onUpdate(...args),
      onDelete: (...args) => this.options.handler.onDelete(...args),
      onBaseline: (...args) => this.options.handler.onBaseline(...args),
      onState: (informer, state) => {
        this.reportState(informer, state);
        this.options.handler.onState?.(informer, state);
      },
    };
    const plan = (namespace: string | undefined) =>
      this.options.planInformer?.(type, namespace, initialList) ?? { initialList };
    const { client, labelSelector } = this.options;
    if (type.namespaced && this.options.namespaces.length > 0) {
      return this.options.namespaces.map(
        (namespace) =>
          new Informer(
            listerWatcherFor(client, type, { namespace, labelSelector }),
            { ...common, namespace, ...plan(namespace) },
            handler,
          ),
      );
    }
    const fieldSelector =
      type.namespaced && this.options.excludeNamespaces.length > 0
        ? this.options.excludeNamespaces.map((namespace) => `metadata.namespace!=${namespace}`).join(',')
        : undefined;
    return [
      new Informer(
        listerWatcherFor(client, type, { labelSelector, fieldSelector }),
        { ...common, ...plan(undefined) },
        handler,
      ),
    ];
  }

  /**
   * Each distinct problem of one resource (403, 404, a failing aggregated
   * API) is logged once, and its recovery once. Losing the connection to
   * the API server affects every resource at once: that is one line when
   * it starts and one when every watch is back, not one per resource.
   */
  /**
   * An informer is no longer cut off: it resumed, or it stopped (its type went away meanwhile). The
   * outage is over when none is left, and said so when at least one watch resumed, whichever is last.
   */
  private leaveOutage(informer: Informer, resumed: boolean): void {
    if (!this.disconnected.delete(informer)) return;
    if (resumed) this.resumedSinceOutage = true;
    if (this.disconnected.size === 0 && this.resumedSinceOutage) {
      this.options.log.info('reconnected: every watch has resumed.');
    }
  }

  private reportState(informer: Informer, state: ReflectorState): void {
    const name =
      qualifiedName(informer.type) + (informer.namespace ? ` in namespace ${informer.namespace}` : '');
    if (state.phase === 'list-progress') {
      this.options.log.warn(`${name}: ${describeListProgress(state.progress)}`);
      return;
    }
    if (state.phase === 'replayed') {
      // A type quiet for longer than the server keeps events is the usual case: nothing to say at info.
      if (state.goneFrom !== undefined)
        this.options.log.debug(
          `${name}: the API server no longer holds its changes since resourceVersion ${state.goneFrom}; ` +
            'objects created and deleted while kubediff was not running are not reported.',
        );
      return;
    }
    if (state.phase === 'failing') {
      if (CONNECTION_FAILURES.has(state.error.kind)) {
        if (this.disconnected.size === 0) {
          this.options.log.warn(`${state.error.message}; reconnecting with backoff.`);
          this.resumedSinceOutage = false;
        }
        this.disconnected.add(informer);
        return;
      }
      // A 429 is the server asking for patience (a CRD's storage still initializing, a watch cache
      // filling, priority and fairness): retried as it asks, and said only if it lasts.
      if (state.error.kind === 'throttled') {
        const since = this.throttledSince.get(informer) ?? Date.now();
        this.throttledSince.set(informer, since);
        if (Date.now() - since < THROTTLED_QUIET_MS) {
          this.options.log.debug(`${name}: ${describeFailure(state.error)}; retrying with backoff.`);
          return;
        }
      }
      const summary =
        describeFailure(state.error) +
        (state.error.kind === 'forbidden'
          ? `; ${rbacHint({ ...informer.type, namespace: informer.namespace })}`
          : '');
      if (this.reported.get(informer) === summary) return;
      this.reported.set(informer, summary);
      const retry = state.slow
        ? `retrying every ${formatDuration(state.retryInMs)}`
        : 'retrying with backoff';
      this.options.log.warn(`${name}: ${summary}; ${retry}.`);
    } else if (state.phase === 'watching' || state.phase === 'stopped') {
      const throttled = this.throttledSince.delete(informer);
      this.leaveOutage(informer, state.phase === 'watching');
      if (this.reported.delete(informer) && state.phase === 'watching') {
        this.options.log.info(`${name}: watching again.`);
      } else if (throttled && state.phase === 'watching') {
        this.options.log.debug(`${name}: watching again.`);
      }
    }
  }

  private startTriggers(): void {
    for (const type of TRIGGER_TYPES) {
      const crds = type === CRD_TYPE;
      const trigger = new Reflector(
        listerWatcherFor(this.options.client, type),
        {
          type,
          timing: { ...this.options.timing, slowRetryMs: this.options.timing?.slowRetryMs ?? 300_000 },
        },
        {
          listStarted: () => {
            if (crds) this.servedSchemas.listStarted();
          },
          listPage: (items) => {
            if (crds) for (const crd of items) this.observeCrd(crd);
          },
          // Every LIST may hide changes, the first one too: a CRD created between the initial
          // discovery and this LIST (while the informers synced) sends no watch event. A discovery
          // that finds nothing new costs two 304s.
          listCompleted: () => {
            if (crds) this.servedSchemas.listCompleted();
            this.scheduleRefresh();
          },
          watchEvent: (eventType, object) => {
            if (crds && eventType === 'DELETED') this.servedSchemas.forget(object);
            else if (crds) this.observeCrd(object);
            this.scheduleRefresh();
          },
          stateChanged: () => {},
        },
      );
      this.triggers.push(trigger);
      trigger.start();
    }
  }

  /** A CRD as listed or watched: when how its objects are served changed, their informers read them again. */
  private observeCrd(crd: KubeObject): void {
    const changed = this.servedSchemas.observe(crd);
    if (!changed) return;
    const key = qualifiedName(changed);
    const informers = this.informers.get(key);
    if (!informers) return;
    this.options.log.info(
      `${key}: its CustomResourceDefinition changed how its objects are served; reading them again.`,
    );
    for (const informer of informers) informer.servedSchemaChanged();
  }

  private scheduleRefresh(): void {
    void this.refresh();
    for (const delay of FOLLOW_UP_REFRESH_MS) {
      const followUp = sleep(delay, this.abort.signal).then(() => {
        this.pendingFollowUps.delete(followUp);
        if (!this.abort.signal.aborted) return this.refresh();
      });
      this.pendingFollowUps.add(followUp);
    }
  }

  private async periodicRediscovery(): Promise<void> {
    const interval = this.options.rediscoveryIntervalMs ?? DEFAULT_REDISCOVERY_MS;
    while (!this.abort.signal.aborted) {
      await sleep(interval, this.abort.signal);
      if (!this.abort.signal.aborted) await this.refresh();
    }
  }
}

function describeFailure(error: KubeError): string {
  switch (error.kind) {
    case 'forbidden':
      return `forbidden (${error.message})`;
    case 'not-found':
      return 'not found: the API server no longer serves it';
    case 'too-large':
      return `${error.message}; raise KUBEDIFF_MAX_READ_SIZE, or leave this type out with --exclude-resource`;
    default:
      return error.message;
  }
}

function kindKey(group: string, kind: string): string {
  return `${group}/${kind}`;
}

function indexByKind(informers: Iterable<Informer[]>): Map<string, Informer[]> {
  const index = new Map<string, Informer[]>();
  for (const ofType of informers) {
    for (const informer of ofType) {
      const key = kindKey(informer.type.group, informer.type.kind);
      const known = index.get(key);
      if (known) known.push(informer);
      else index.set(key, [informer]);
    }
  }
  return index;
}

/** What the log says of a LIST that expired or has been slow: how far it came. */
function describeListProgress(progress: ListProgress): string {
  const read = plural(progress.objects, 'object');
  const time = formatDuration(Math.max(1, progress.elapsedMs));
  if (progress.reason === 'expired') {
    return `its LIST outlived etcd's compaction: the continue token expired after ${plural(progress.pages, 'page')} (${read}, ${time}); reading the whole list in one request instead, as client-go's pager does.`;
  }
  return `still listing after ${time}: ${progress.whole ? `${read} of the whole list read so far` : `${plural(progress.pages, 'page')}, ${read} so far`} (a large type, a slow link, or a throttled client).`;
}
