// Follows one cluster's Warning Events for the verdicts, internally: they feed the outcome engine (its
// WarningLog of the cluster) and are never reported as changes (`events` is a high-churn type kubediff does not watch unless asked).
// One reflector per namespace watched (-n), else one for every namespace but the excluded ones, each
// with the field selector `type=Warning`, so that the API server sends Warnings alone. It needs `list`
// and `watch` on `events` (core group) where kubediff watches (docs/outcomes.md, "Warning Events"); without
// them the verdicts are reached without Warning Events, said once.

import {
  Reflector,
  type ReflectorSink,
  type ReflectorState,
  type ReflectorTiming,
  type WatchEventType,
} from '../../informer/reflector.ts';
import { KubeError, type KubeFailureKind } from '../../kube/errors.ts';
import { type CollectionReader, listerWatcherFor } from '../../kube/lister-watcher.ts';
import { rbacHint } from '../../kube/rbac-hint.ts';
import type { KubeObject, ResourceType } from '../../kube/types.ts';
import { errorMessage } from '../../util/errors.ts';
import type { Logger } from '../../util/log.ts';

/** Failures of the connection itself, which the watch reports once for every type. */
const CONNECTION_FAILURES: ReadonlySet<KubeFailureKind> = new Set(['network', 'tls', 'unauthorized']);

const EVENTS: ResourceType = {
  group: '',
  version: 'v1',
  resource: 'events',
  kind: 'Event',
  namespaced: true,
  verbs: ['list', 'watch'],
  shortNames: ['ev'],
  singularName: 'event',
  categories: [],
};

/** Where a cluster's Warning Events are followed: the namespaces kubediff watches. */
export interface WarningScope {
  /** -n: these namespaces alone (one watch each). */
  namespaces: readonly string[];
  /** --exclude-namespace: every namespace but these. */
  excludeNamespaces: readonly string[];
}

/** Where the Events go: whether one was kept, and that one is gone. */
export interface WarningTarget {
  /** An Event as served; true when it is kept (a Warning about a kind the verdicts look at). */
  seen(event: KubeObject): boolean;
  /** The Event `uid` is gone (deleted, or no longer listed). */
  gone(uid: string): void;
}

export interface WarningFollowerOptions {
  client: CollectionReader;
  scope: WarningScope;
  target: WarningTarget;
  logger: Logger;
  timing?: Partial<ReflectorTiming>;
}

/** The reflectors of one cluster's Warning Events. */
export class WarningFollower {
  private readonly reflectors: Reflector[];

  constructor(options: WarningFollowerOptions) {
    const { client, scope } = options;
    const report = failureReporter(options.logger, scope);
    const scopes =
      scope.namespaces.length > 0
        ? scope.namespaces.map((namespace) => ({ namespace, fieldSelector: 'type=Warning' }))
        : [
            {
              namespace: undefined,
              fieldSelector: [
                'type=Warning',
                ...scope.excludeNamespaces.map((namespace) => `metadata.namespace!=${namespace}`),
              ].join(','),
            },
          ];
    this.reflectors = scopes.map(
      ({ namespace, fieldSelector }) =>
        new Reflector(
          listerWatcherFor(client, EVENTS, { namespace, fieldSelector }),
          { type: EVENTS, ...(options.timing ? { timing: options.timing } : {}) },
          new WarningSink(options.target, (state) => report(state, namespace)),
        ),
    );
  }

  start(): void {
    for (const reflector of this.reflectors) reflector.start();
  }

  async stop(): Promise<void> {
    await Promise.all(this.reflectors.map((reflector) => reflector.stop()));
  }
}

/** One reflector's Events to the target; a relist says which of its scope's Events are gone. */
class WarningSink implements ReflectorSink {
  private readonly target: WarningTarget;
  private readonly state: (state: ReflectorState) => void;
  /** The Events of this scope the target kept. */
  private readonly mine = new Set<string>();
  private listed: Set<string> | undefined;

  constructor(target: WarningTarget, state: (state: ReflectorState) => void) {
    this.target = target;
    this.state = state;
  }

  listStarted(): void {
    this.listed = new Set();
  }

  listPage(items: KubeObject[]): void {
    for (const item of items) {
      this.listed?.add(item.metadata.uid);
      this.take(item);
    }
  }

  listCompleted(): void {
    const listed = this.listed ?? new Set<string>();
    this.listed = undefined;
    for (const uid of [...this.mine]) {
      if (listed.has(uid)) continue;
      this.mine.delete(uid);
      this.target.gone(uid);
    }
  }

  watchEvent(type: WatchEventType, object: KubeObject): void {
    if (type !== 'DELETED') {
      this.take(object);
      return;
    }
    this.mine.delete(object.metadata.uid);
    this.target.gone(object.metadata.uid);
  }

  private take(event: KubeObject): void {
    if (this.target.seen(event)) this.mine.add(event.metadata.uid);
  }

  stateChanged(state: ReflectorState): void {
    this.state(state);
  }
}

/**
 * Says once per scope that Warning Events cannot be read, and once that they can again. A lost connection
 * to the API server is the watch's to report (src/informer/cluster-watcher.ts): said here in --debug only.
 */
function failureReporter(
  logger: Logger,
  scope: WarningScope,
): (state: ReflectorState, namespace: string | undefined) => void {
  const failing = new Set<string | undefined>();
  return (state, namespace) => {
    const where = namespace ? ` in namespace ${namespace}` : '';
    if (state.phase === 'failing') {
      if (state.error instanceof KubeError && CONNECTION_FAILURES.has(state.error.kind)) {
        logger.debug(`outcomes: Warning events${where}: ${errorMessage(state.error)}`);
        return;
      }
      if (failing.has(namespace)) return;
      failing.add(namespace);
      const hint =
        state.error instanceof KubeError && state.error.kind === 'forbidden'
          ? `; ${rbacHint({ group: '', resource: 'events', namespace: namespace ?? scopeNamespace(scope) })}`
          : '';
      logger.warn(
        `outcomes: cannot read Warning events${where} (${errorMessage(state.error).replace(/\.$/, '')}): verdicts are reached without them, retried in the background${hint}.`,
      );
    } else if (state.phase === 'watching' && failing.delete(namespace)) {
      logger.info(`outcomes: reading Warning events${where} again.`);
    }
  };
}

function scopeNamespace(scope: WarningScope): string | undefined {
  return scope.namespaces.length === 1 ? scope.namespaces[0] : undefined;
}
