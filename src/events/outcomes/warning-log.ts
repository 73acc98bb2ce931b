// The Warning Events of one cluster that a verdict may name (a pod's BackOff, Failed, Unhealthy,
// FailedScheduling; a ReplicaSet's FailedCreate; a Job's BackoffLimitExceeded), compact: about which
// object, why, how often, when. Only Events about the kinds whose rollouts are followed (pods,
// ReplicaSets, Deployments, StatefulSets, DaemonSets, Jobs) are kept.
//
// Bounded: at most `max` Events (DEFAULT_MAX_WARNINGS per cluster); beyond, the one updated longest ago
// is forgotten (an Event the API server keeps for an hour, which no rollout followed now is likely to
// need), counted (a metric) and said once (onFull).
import { isJsonObject, type JsonObject, type KubeObject } from '../../kube/types.ts';
import { countAt, shortTextAt, textAt, timeAt } from './raw-fields.ts';

/** Warning Events one cluster's log holds at most. */
export const DEFAULT_MAX_WARNINGS = 20_000;

/** The kinds of the objects whose Warning Events are kept. */
const INVOLVED_KINDS = new Set(['Pod', 'ReplicaSet', 'Deployment', 'StatefulSet', 'DaemonSet', 'Job']);

export interface Warning {
  /** The Event's own uid. */
  readonly uid: string;
  /** The uid of the object it is about. */
  readonly involved: string;
  /** `Pod/web-5fc8c76ccf-x2v9k`. */
  readonly object: string;
  readonly reason: string;
  readonly message: string;
  /** How many times it happened (an Event's count, or its series' count). */
  readonly count: number;
  /** When it first and last happened (ms; one-second resolution for most). */
  readonly first: number;
  readonly last: number;
}

export class WarningLog {
  private readonly max: number;
  private readonly onFull: (() => void) | undefined;
  /** By the Event's uid; Map order is the order of their last update (the oldest first). */
  private readonly warnings = new Map<string, Warning>();
  private readonly byInvolved = new Map<string, Set<string>>();
  /** Events forgotten at the bound. */
  forgotten = 0;

  constructor(options: { max?: number; onFull?: () => void } = {}) {
    this.max = Math.max(1, options.max ?? DEFAULT_MAX_WARNINGS);
    this.onFull = options.onFull;
  }

  /** An Event as served; returns the uid of the object it is about when it is kept. */
  seen(event: KubeObject): string | undefined {
    const warning = warningOf(event);
    if (!warning) return undefined;
    const previous = this.warnings.get(warning.uid);
    if (previous) {
      this.warnings.delete(warning.uid);
      if (previous.involved !== warning.involved) this.unindex(previous);
    }
    this.warnings.set(warning.uid, warning);
    let set = this.byInvolved.get(warning.involved);
    if (!set) {
      set = new Set();
      this.byInvolved.set(warning.involved, set);
    }
    set.add(warning.uid);
    while (this.warnings.size > this.max) {
      const oldest = this.warnings.values().next().value;
      if (!oldest) break;
      this.removed(oldest.uid);
      if (this.forgotten++ === 0) this.onFull?.();
    }
    return warning.involved;
  }

  /** The Event is gone (deleted, expired); returns the uid of the object it was about. */
  removed(uid: string): string | undefined {
    const warning = this.warnings.get(uid);
    if (!warning) return undefined;
    this.warnings.delete(uid);
    this.unindex(warning);
    return warning.involved;
  }

  private unindex(warning: Warning): void {
    const set = this.byInvolved.get(warning.involved);
    set?.delete(warning.uid);
    if (set?.size === 0) this.byInvolved.delete(warning.involved);
  }

  /** The Warning Events about the object `involved` (a uid). */
  about(involved: string): Warning[] {
    return [...(this.byInvolved.get(involved) ?? [])].flatMap((uid) => this.warnings.get(uid) ?? []);
  }

  /** Every Event's uid, for a relist to tell which are gone. */
  uids(): IterableIterator<string> {
    return this.warnings.keys();
  }

  get size(): number {
    return this.warnings.size;
  }

  clear(): void {
    this.warnings.clear();
    this.byInvolved.clear();
  }
}

/** The Warning an Event is, when it is one about a kind the verdicts look at. */
export function warningOf(event: KubeObject): Warning | undefined {
  if (event.type !== 'Warning') return undefined;
  const involved = isJsonObject(event.involvedObject) ? event.involvedObject : undefined;
  const kind = textAt(involved, 'kind');
  const uid = textAt(involved, 'uid');
  const name = textAt(involved, 'name');
  if (!kind || !uid || !name || !INVOLVED_KINDS.has(kind)) return undefined;
  const metadata = event.metadata as unknown as JsonObject;
  const series = isJsonObject(event.series) ? event.series : undefined;
  const created = timeAt(metadata, 'creationTimestamp') ?? 0;
  const eventTime = timeAt(event as unknown as JsonObject, 'eventTime');
  const first = timeAt(event as unknown as JsonObject, 'firstTimestamp') ?? eventTime ?? created;
  const last =
    timeAt(series, 'lastObservedTime') ??
    timeAt(event as unknown as JsonObject, 'lastTimestamp') ??
    eventTime ??
    first;
  return {
    uid: event.metadata.uid,
    involved: uid,
    object: `${kind}/${name}`,
    reason: textAt(event as unknown as JsonObject, 'reason') ?? '',
    message: shortTextAt(event as unknown as JsonObject, 'message') ?? '',
    count: Math.max(1, countAt(series, 'count') ?? countAt(event as unknown as JsonObject, 'count') ?? 1),
    first,
    last: Math.max(first, last),
  };
}
