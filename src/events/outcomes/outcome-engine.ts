// Follows every rollout of a workload to its outcome (docs/outcomes.md): a pipeline observer that keeps a
// compact health view of each cluster's workloads and pods from the objects as they pass (objectServed),
// opens a rollout for each change it must follow (changeProcessed), judges it again whenever something
// about it changes (its pods, its ReplicaSet, its Warning Events), and reports one OUTCOME when the verdict
// settles: `healthy`, `degraded` or `failed` as the rules say (verdict.ts), `superseded` when another
// change to the workload came first, `unknown` when no verdict came within the bound (`timeoutMs`).
//
// A rollout is one change: the creation of a Deployment, StatefulSet or DaemonSet, an update of its spec,
// or a Job's creation (a CronJob's run is its Job's). A scale (`/spec/replicas` alone) while one is open
// joins it (an autoscaler would otherwise end every rollout); any other followed change ends it as
// `superseded` and opens its own; so does the workload's deletion. Judging waits for the cluster's first
// sync, so that a catch-up's rollout is not judged before the pods are known.
//
// Bounded: at most `maxOpen` rollouts are open (beyond, the oldest is settled `unknown`, said once); the
// health views share one budget of records (health-view.ts); each cluster's Warning log has its own
// (warning-log.ts). OUTCOMEs are reported on the next turn of the event loop, after the change that
// settled them went its way, never from inside an observer call.

import type { ReflectorTiming } from '../../informer/reflector.ts';
import type { CollectionReader } from '../../kube/lister-watcher.ts';
import type { KubeObject, ResourceType } from '../../kube/types.ts';
import { formatDuration, MAX_TIMER_MS } from '../../util/duration.ts';
import type { Logger } from '../../util/log.ts';
import { isoTimestamp } from '../../util/timestamp.ts';
import type { ChangeEvent, OutcomeEvent, Verdict } from '../event.ts';
import type { DeliveryMark, PipelineObserver, StoreChange } from '../pipeline.ts';
import { DEFAULT_MAX_RECORDS, HealthView, RecordBudget, type ViewedKind } from './health-view.ts';
import { isScaleOnly, type Rollout, rolloutKey, startsRollout } from './rollout.ts';
import { type Judgement, judgeRollout } from './verdict.ts';
import { WarningFollower, type WarningScope } from './warning-follower.ts';
import { DEFAULT_MAX_WARNINGS, WarningLog } from './warning-log.ts';
import { WORKLOAD_KINDS, type WorkloadKind } from './workload-health.ts';

/** No verdict within this long after the change: `unknown` (--outcome-timeout). */
export const DEFAULT_OUTCOME_TIMEOUT_MS = 15 * 60_000;
/** Rollouts followed at once, at most. */
export const DEFAULT_MAX_OPEN = 10_000;

export interface OutcomeEngineOptions {
  timeoutMs?: number;
  maxOpen?: number;
  maxRecords?: number;
  maxWarnings?: number;
  log: Logger;
  now?: () => number;
  /** The Warning followers' reflector timing (tests). */
  timing?: Partial<ReflectorTiming>;
}

/** What the engine has done (metrics). */
export interface OutcomeStats {
  open: number;
  /** OUTCOMEs reported, per verdict. */
  reported: Record<Verdict, number>;
  records: number;
  maxRecords: number;
  /** Objects left out of the health views at their bound. */
  recordsLeftOut: number;
  warnings: number;
  /** Warning Events forgotten at their bound. */
  warningsForgotten: number;
  /** Rollouts settled `unknown` because too many were open. */
  settledAtBound: number;
}

/** A rollout a previous run followed and left without an OUTCOME: its change, and the scales that joined it. */
export interface PendingRollout {
  change: ChangeEvent;
  kind: WorkloadKind;
  /** The ids of the scales that joined it. */
  joined: string[];
}

/** One cluster's view, Warning log and Warning follower. */
interface ClusterState {
  view: HealthView;
  warnings: WarningLog;
  follower: WarningFollower | undefined;
  synced: boolean;
}

export class OutcomeEngine implements PipelineObserver {
  private readonly timeoutMs: number;
  private readonly maxOpen: number;
  private readonly maxWarnings: number;
  private readonly log: Logger;
  private readonly now: () => number;
  private readonly timing: Partial<ReflectorTiming> | undefined;
  private readonly budget: RecordBudget;
  private readonly clusters = new Map<string | undefined, ClusterState>();
  /** Open rollouts by cluster and workload uid; Map order is the order they opened. */
  private readonly open = new Map<string, Rollout>();
  /** Per rollout, its timer (the bound, or a pod's recheck). */
  private readonly timers = new Map<string, NodeJS.Timeout>();
  private readonly dirty = new Set<string>();
  private readonly outbox: OutcomeEvent[] = [];
  private flushing: NodeJS.Immediate | undefined;
  private report: (outcome: OutcomeEvent) => void = () => {};
  private readonly kinds = new WeakMap<ResourceType, ViewedKind | null>();
  private readonly reported: Record<Verdict, number> = {
    healthy: 0,
    degraded: 0,
    failed: 0,
    superseded: 0,
    unknown: 0,
  };
  private settledAtBound = 0;
  private stopped = false;

  constructor(options: OutcomeEngineOptions) {
    this.timeoutMs = options.timeoutMs ?? DEFAULT_OUTCOME_TIMEOUT_MS;
    this.maxOpen = Math.max(1, options.maxOpen ?? DEFAULT_MAX_OPEN);
    this.maxWarnings = options.maxWarnings ?? DEFAULT_MAX_WARNINGS;
    this.log = options.log;
    this.now = options.now ?? Date.now;
    this.timing = options.timing;
    this.budget = new RecordBudget(options.maxRecords ?? DEFAULT_MAX_RECORDS, () =>
      this.log.warn(
        `outcomes: the health view holds ${this.budget.max} objects (pods, ReplicaSets, workloads); objects beyond are not followed, and the verdicts of their rollouts say so (said once; counted in kubediff_outcome_objects_left_out_total).`,
      ),
    );
  }

  /** Where OUTCOMEs go: the pipeline (Pipeline.report), set once it is built. */
  reportTo(report: (outcome: OutcomeEvent) => void): void {
    this.report = report;
  }

  /**
   * Follows `cluster`'s Warning Events in `scope` through `client` (they are evidence); stopped by
   * stop(). Without it the verdicts are reached without them.
   */
  followWarnings(cluster: string | undefined, client: CollectionReader, scope: WarningScope): void {
    const state = this.cluster(cluster);
    if (state.follower || this.stopped) return;
    state.follower = new WarningFollower({
      client,
      scope,
      target: {
        seen: (event) => this.warningSeen(cluster, event),
        gone: (uid) => this.warningGone(cluster, uid),
      },
      logger: this.log,
      ...(this.timing ? { timing: this.timing } : {}),
    });
    state.follower.start();
  }

  /** A Warning Event as served (WarningFollower); true when it is kept for the verdicts. */
  warningSeen(cluster: string | undefined, event: KubeObject): boolean {
    const state = this.cluster(cluster);
    const involved = state.warnings.seen(event);
    if (involved === undefined) return false;
    this.touched(cluster, state, involved);
    return true;
  }

  /** A Warning Event is gone (WarningFollower). */
  warningGone(cluster: string | undefined, uid: string): void {
    const state = this.cluster(cluster);
    const involved = state.warnings.removed(uid);
    if (involved !== undefined) this.touched(cluster, state, involved);
  }

  /** The cluster's first sync is over: its rollouts can be judged. */
  synced(cluster: string | undefined): void {
    const state = this.cluster(cluster);
    if (state.synced) return;
    state.synced = true;
    for (const rollout of this.open.values()) if (rollout.cluster === cluster) this.mark(rollout.key);
  }

  /**
   * Rollouts a previous run followed and reported no OUTCOME for (read from the history at start):
   * followed again, judged from what the cluster shows once synced, `after` still counted from the change.
   */
  resume(cluster: string | undefined, rollouts: readonly PendingRollout[]): void {
    for (const { change, kind, joined } of rollouts) {
      const key = rolloutKey(cluster, change.object.uid);
      const previous = this.open.get(key);
      if (previous) this.settle(previous, 'superseded', { supersededBy: change.id });
      this.openRollout(cluster, kind, change, true)?.follows.push(...joined);
    }
  }

  // PipelineObserver

  objectServed(type: ResourceType, object: KubeObject, cluster: string | undefined): void {
    const kind = this.kindOf(type);
    if (!kind) return;
    const state = this.cluster(cluster);
    const workload = state.view.seen(kind, object, this.now());
    if (workload !== undefined) this.mark(rolloutKey(cluster, workload));
  }

  changeProcessed(change: StoreChange, reported: ChangeEvent | undefined, _mark: DeliveryMark): void {
    const kind = this.kindOf(change.type);
    if (!kind) return;
    const cluster = change.cluster;
    const state = this.cluster(cluster);
    if (change.kind === 'deleted') {
      // Settled with the evidence of its last state, before the view forgets it.
      const open = this.open.get(rolloutKey(cluster, change.object.uid));
      if (open && reported) this.settle(open, 'superseded', { supersededBy: reported.id });
      const workload = state.view.removed(kind, change.object.uid);
      if (workload !== undefined) this.mark(rolloutKey(cluster, workload));
      return;
    }
    // A replayed workload (created and deleted while kubediff was down) has no outcome to follow.
    if (!reported || change.replayed || kind === 'Pod' || kind === 'ReplicaSet') return;
    if (!startsRollout(reported, kind, change.initial === true)) return;
    const open = this.open.get(rolloutKey(cluster, reported.object.uid));
    if (open && isScaleOnly(reported)) {
      open.follows.push(reported.id);
      // Wait for the controller to observe the scale too.
      open.generation = state.view.workload(open.workload)?.generation ?? open.generation;
      this.mark(open.key);
      return;
    }
    if (open) this.settle(open, 'superseded', { supersededBy: reported.id });
    this.openRollout(cluster, kind, reported, false);
  }

  /** Stops following; `settleOpen` (no history to resume from) reports the open rollouts `unknown`. */
  async stop(settleOpen: boolean): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    for (const timer of this.timers.values()) clearTimeout(timer);
    this.timers.clear();
    await Promise.all([...this.clusters.values()].map((state) => state.follower?.stop()));
    if (settleOpen) {
      for (const rollout of [...this.open.values()]) {
        this.settle(rollout, 'unknown', { note: 'kubediff stopped before a verdict' });
      }
    }
    this.open.clear();
    this.flush();
    if (this.flushing) clearImmediate(this.flushing);
    this.flushing = undefined;
    for (const state of this.clusters.values()) {
      state.view.clear();
      state.warnings.clear();
    }
  }

  stats(): OutcomeStats {
    let warnings = 0;
    let forgotten = 0;
    for (const state of this.clusters.values()) {
      warnings += state.warnings.size;
      forgotten += state.warnings.forgotten;
    }
    return {
      open: this.open.size,
      reported: { ...this.reported },
      records: this.budget.used,
      maxRecords: this.budget.max,
      recordsLeftOut: this.budget.leftOut,
      warnings,
      warningsForgotten: forgotten,
      settledAtBound: this.settledAtBound,
    };
  }

  private kindOf(type: ResourceType): ViewedKind | undefined {
    let kind = this.kinds.get(type);
    if (kind === undefined) {
      kind =
        type.group === '' && type.resource === 'pods'
          ? 'Pod'
          : type.group === 'apps' && type.resource === 'replicasets'
            ? 'ReplicaSet'
            : (WORKLOAD_KINDS.get(`${type.group}/${type.resource}`) ?? null);
      this.kinds.set(type, kind);
    }
    return kind ?? undefined;
  }

  private cluster(cluster: string | undefined): ClusterState {
    let state = this.clusters.get(cluster);
    if (!state) {
      const warnings = new WarningLog({
        max: this.maxWarnings,
        onFull: () =>
          this.log.warn(
            `outcomes: more than ${this.maxWarnings} Warning events${cluster ? ` in cluster ${cluster}` : ''}; the oldest are forgotten, so a verdict may count fewer (said once; counted in kubediff_outcome_warnings_forgotten_total).`,
          ),
      });
      state = { view: new HealthView(this.budget), warnings, follower: undefined, synced: false };
      this.clusters.set(cluster, state);
    }
    return state;
  }

  /** A Warning Event about `involved` changed: the rollout of the workload it concerns is judged again. */
  private touched(cluster: string | undefined, state: ClusterState, involved: string): void {
    if (this.stopped || this.open.size === 0) return;
    const workload = state.view.workloadOfObject(involved);
    if (workload !== undefined) this.mark(rolloutKey(cluster, workload));
  }

  private openRollout(
    cluster: string | undefined,
    kind: WorkloadKind,
    change: ChangeEvent,
    resumed: boolean,
  ): Rollout | undefined {
    if (this.stopped) return undefined;
    while (this.open.size >= this.maxOpen) {
      const oldest = this.open.values().next().value;
      if (!oldest) break;
      if (this.settledAtBound++ === 0) {
        this.log.warn(
          `outcomes: more than ${this.maxOpen} rollouts followed at once; the oldest is reported unknown (said once; counted in kubediff_outcome_settled_at_bound_total).`,
        );
      }
      this.settle(oldest, 'unknown', { note: `more than ${this.maxOpen} rollouts were followed at once` });
    }
    const state = this.cluster(cluster);
    const since = Date.parse(change.time);
    const rollout: Rollout = {
      key: rolloutKey(cluster, change.object.uid),
      cluster,
      kind,
      workload: change.object.uid,
      change,
      since: Number.isNaN(since) ? this.now() : since,
      follows: [change.id],
      generation: resumed ? undefined : state.view.workload(change.object.uid)?.generation,
      restartsBefore: new Map(),
      warningsBefore: new Map(),
      resumed,
      recheckAt: undefined,
    };
    if (!resumed) this.snapshot(state, rollout);
    this.open.set(rollout.key, rollout);
    this.arm(rollout);
    this.mark(rollout.key);
    return rollout;
  }

  /** What the workload's objects had gone through when the change was made: not the change's doing. */
  private snapshot(state: ClusterState, rollout: Rollout): void {
    const owners =
      rollout.kind === 'Deployment'
        ? state.view.replicaSetsOf(rollout.workload).map((replicaSet) => replicaSet.uid)
        : [rollout.workload];
    const involved = [rollout.workload, ...owners];
    for (const owner of owners) {
      for (const pod of state.view.podsOf(owner)) {
        rollout.restartsBefore.set(pod.uid, pod.restarts);
        involved.push(pod.uid);
      }
    }
    for (const uid of involved) {
      for (const warning of state.warnings.about(uid)) rollout.warningsBefore.set(warning.uid, warning.count);
    }
  }

  /** The rollout's timer: the bound, or sooner a pod's recheck. */
  private arm(rollout: Rollout): void {
    const previous = this.timers.get(rollout.key);
    if (previous) clearTimeout(previous);
    const deadline = rollout.since + this.timeoutMs;
    const due = Math.min(deadline, rollout.recheckAt ?? Number.POSITIVE_INFINITY);
    const timer = setTimeout(
      () => {
        this.timers.delete(rollout.key);
        if (this.open.get(rollout.key) !== rollout) return;
        if (this.now() >= deadline) {
          this.settle(rollout, 'unknown', {
            note: `no verdict within ${formatDuration(this.timeoutMs)} of the change`,
          });
          return;
        }
        rollout.recheckAt = undefined;
        this.mark(rollout.key);
      },
      Math.min(MAX_TIMER_MS, Math.max(0, due - this.now())),
    );
    this.timers.set(rollout.key, timer);
  }

  private mark(key: string): void {
    if (this.stopped || !this.open.has(key)) return;
    this.dirty.add(key);
    this.schedule();
  }

  private schedule(): void {
    this.flushing ??= setImmediate(() => {
      this.flushing = undefined;
      this.evaluateDirty();
      this.flush();
    });
  }

  private evaluateDirty(): void {
    const keys = [...this.dirty];
    this.dirty.clear();
    for (const key of keys) {
      const rollout = this.open.get(key);
      if (!rollout) continue;
      const state = this.cluster(rollout.cluster);
      if (!state.synced) continue;
      const judgement = judgeRollout(rollout, state.view, state.warnings, this.now());
      if (judgement.verdict) {
        this.emit(rollout, judgement.verdict, judgement);
        continue;
      }
      if (judgement.recheckAt !== rollout.recheckAt) {
        rollout.recheckAt = judgement.recheckAt;
        this.arm(rollout);
      }
    }
  }

  /** Ends a rollout without the rules' verdict (superseded, unknown), with the evidence of the moment. */
  private settle(
    rollout: Rollout,
    verdict: 'superseded' | 'unknown',
    extra: { supersededBy?: string; note?: string },
  ): void {
    const state = this.cluster(rollout.cluster);
    const judgement = judgeRollout(rollout, state.view, state.warnings, this.now());
    const { evidence } = judgement;
    if (extra.supersededBy !== undefined) evidence.supersededBy = extra.supersededBy;
    if (extra.note !== undefined)
      evidence.note = evidence.note ? `${extra.note}; ${evidence.note}` : extra.note;
    this.emit(rollout, verdict, judgement);
  }

  private emit(rollout: Rollout, verdict: Verdict, judgement: Judgement): void {
    if (this.open.get(rollout.key) === rollout) this.open.delete(rollout.key);
    this.dirty.delete(rollout.key);
    const timer = this.timers.get(rollout.key);
    if (timer) clearTimeout(timer);
    this.timers.delete(rollout.key);
    const now = this.now();
    const { change } = rollout;
    this.reported[verdict]++;
    this.outbox.push({
      id: `outcome:${rollout.follows[0]}`,
      type: 'OUTCOME',
      time: isoTimestamp(now),
      ...(change.cluster !== undefined ? { cluster: change.cluster } : {}),
      object: change.object,
      ...(change.owner ? { owner: change.owner } : {}),
      follows: [...rollout.follows],
      verdict,
      after: Math.max(0, Math.round(now - rollout.since) / 1000),
      evidence: judgement.evidence,
      ...(change.by ? { by: change.by } : {}),
      ...(change.offline ? { offline: true as const } : {}),
    });
    this.schedule();
  }

  private flush(): void {
    const outcomes = this.outbox.splice(0);
    for (const outcome of outcomes) this.report(outcome);
  }
}
