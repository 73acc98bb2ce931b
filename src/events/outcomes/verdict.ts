// A rollout judged from one cluster's health view and Warning log (docs/outcomes.md, "The verdict"):
//
// - only the pods of the revision the change made count: the Deployment's new ReplicaSet (the one whose
//   revision annotation its Deployment names, once its controller observed the change), the
//   StatefulSet's updateRevision, the DaemonSet's pods created since the change, the Job's pods;
// - `failed` when the workload's controller says so (a Deployment's ProgressDeadlineExceeded, a Job's
//   Failed condition);
// - `degraded` when a pod of the revision is failing (pod-health.ts), or the new ReplicaSet cannot create
//   its pods (ReplicaFailure);
// - `healthy` when the workload's controller says the rollout is done (workload-health.ts) and no pod of
//   the revision is failing;
// - otherwise no verdict yet.
//
// The evidence is what a person needs to see why: the pods of the revision (the worst first), their
// restarts since the change and last termination, the Warning Events of those pods and of the workload
// counted since the change, and the workload's conditions.
import type { ConditionEvidence, OutcomeEvidence, PodEvidence, Verdict, WarningEvidence } from '../event.ts';
import type { HealthView } from './health-view.ts';
import {
  judgePod,
  type PodHealth,
  type PodVerdict,
  podReason,
  UNSCHEDULABLE_AFTER_MS,
} from './pod-health.ts';
import type { Rollout } from './rollout.ts';
import type { WarningLog } from './warning-log.ts';
import { judgeWorkload, type WorkloadHealth, type WorkloadProgress } from './workload-health.ts';

/**
 * What stands for a message about a pod that reads a Secret: the kubelet expands the Secret's values into
 * the commands and arguments its messages quote, and a probe's output is a program's (docs/outcomes.md).
 */
export const WITHHELD = 'not shown: the pod reads a Secret, which this message may quote';

const RESUMED_NOTE =
  'followed again after kubediff restarted: restarts and Warnings before that are not all known';

/** Pods listed in the evidence at most (the worst first); `podCount` says how many there are. */
export const PODS_LISTED = 10;
/** Warning Events listed at most (the most frequent first). */
export const WARNINGS_LISTED = 10;

export interface Judgement {
  /** Undefined: no verdict yet. */
  verdict: Exclude<Verdict, 'superseded' | 'unknown'> | undefined;
  evidence: OutcomeEvidence;
  /** When to look again without news (an unschedulable pod's 15 s), ms. */
  recheckAt: number | undefined;
}

/** The pods of the change's revision, and what names that revision. */
interface Revision {
  name: string | undefined;
  /** Its pods' controller: the ReplicaSet of a Deployment, the workload itself otherwise. */
  owner: string | undefined;
  pods: PodHealth[];
  /** The new ReplicaSet's ReplicaFailure condition. */
  failure: ConditionEvidence | undefined;
}

export function judgeRollout(
  rollout: Rollout,
  view: HealthView,
  warnings: WarningLog,
  now: number,
): Judgement {
  const workload = view.workload(rollout.workload);
  if (!workload) {
    return {
      verdict: undefined,
      evidence: {
        summary: 'the workload has not been seen yet',
        pods: [],
        podCount: 0,
        warnings: [],
        conditions: [],
        ...(rollout.resumed ? { note: RESUMED_NOTE } : {}),
      },
      recheckAt: undefined,
    };
  }
  rollout.generation ??= workload.generation;
  const progress = judgeWorkload(workload, rollout.generation);
  const revision = revisionOf(rollout, workload, view);
  const judged = revision.pods.map((pod) => ({
    pod,
    verdict: judgePod(pod, rollout.restartsBefore.get(pod.uid) ?? 0, now),
  }));
  const failing = judged.filter((entry) => entry.verdict === 'failing');
  const verdict: Judgement['verdict'] =
    progress.state === 'failed'
      ? 'failed'
      : failing.length > 0 || revision.failure
        ? 'degraded'
        : progress.state === 'done'
          ? 'healthy'
          : undefined;
  const evidence = evidenceOf(rollout, workload, revision, judged, progress, warnings, view, now);
  evidence.summary = summarize(verdict, progress, revision, judged, rollout, now);
  const waiting = revision.pods.flatMap((pod) =>
    pod.unschedulable && now - pod.unschedulable.since < UNSCHEDULABLE_AFTER_MS
      ? [pod.unschedulable.since + UNSCHEDULABLE_AFTER_MS]
      : [],
  );
  return { verdict, evidence, recheckAt: waiting.length > 0 ? Math.min(...waiting) : undefined };
}

function revisionOf(rollout: Rollout, workload: WorkloadHealth, view: HealthView): Revision {
  const observed = workload.observedGeneration >= (rollout.generation ?? 0);
  switch (workload.kind) {
    case 'Deployment': {
      // Until the controller observed the change, its revision annotation names the old ReplicaSet.
      const replicaSet = observed
        ? view.replicaSetsOf(workload.uid).find((candidate) => candidate.revision === workload.revision)
        : undefined;
      return {
        name: replicaSet?.name,
        owner: replicaSet?.uid,
        pods: replicaSet ? view.podsOf(replicaSet.uid) : [],
        failure: replicaSet?.failure,
      };
    }
    case 'StatefulSet':
      return {
        name: observed ? workload.revision : undefined,
        owner: workload.uid,
        pods: observed ? view.podsOf(workload.uid).filter((pod) => pod.revision === workload.revision) : [],
        failure: undefined,
      };
    case 'DaemonSet': {
      // A DaemonSet names no revision in its status: its pods created since the change are the new one's
      // (creationTimestamp has one-second resolution: the change's second counts).
      const since = Math.floor(rollout.since / 1000) * 1000;
      const pods = view.podsOf(workload.uid).filter((pod) => pod.created >= since);
      return { name: pods[0]?.revision, owner: workload.uid, pods, failure: undefined };
    }
    case 'Job':
      return {
        name: workload.name,
        owner: workload.uid,
        pods: view.podsOf(workload.uid),
        failure: undefined,
      };
  }
}

const ORDER: Record<PodVerdict, number> = { failing: 0, starting: 1, healthy: 2 };

function evidenceOf(
  rollout: Rollout,
  workload: WorkloadHealth,
  revision: Revision,
  judged: readonly { pod: PodHealth; verdict: PodVerdict }[],
  progress: WorkloadProgress,
  warnings: WarningLog,
  view: HealthView,
  now: number,
): OutcomeEvidence {
  const pods = [...judged]
    .sort((a, b) => ORDER[a.verdict] - ORDER[b.verdict] || a.pod.name.localeCompare(b.pod.name))
    .slice(0, PODS_LISTED)
    .map(({ pod }) => podEvidence(pod, rollout, now));
  const involved = [
    workload.uid,
    ...(revision.owner !== undefined && revision.owner !== workload.uid ? [revision.owner] : []),
    ...revision.pods.map((pod) => pod.uid),
  ];
  const notes: string[] = [];
  if (revision.owner !== undefined && view.isPartial(revision.owner)) {
    notes.push('some pods of the revision were not followed: the health view was full');
  }
  if (rollout.resumed) notes.push(RESUMED_NOTE);
  if (progress.state === 'waiting') notes.push(progress.detail);
  return {
    summary: '',
    ...(revision.name !== undefined ? { revision: revision.name } : {}),
    ...(workload.kind !== 'Job'
      ? {
          replicas: {
            desired: workload.desired,
            updated: workload.updated,
            ready: workload.ready,
            available: workload.available,
          },
        }
      : {}),
    pods,
    podCount: revision.pods.length,
    warnings: warningEvidence(
      involved,
      new Set(revision.pods.filter((pod) => pod.readsSecrets).map((pod) => pod.uid)),
      rollout,
      warnings,
    ),
    conditions: [...workload.conditions, ...(revision.failure ? [revision.failure] : [])],
    ...(notes.length > 0 ? { note: notes.join('; ') } : {}),
  };
}

function podEvidence(pod: PodHealth, rollout: Rollout, now: number): PodEvidence {
  const reason = podReason(pod, now);
  const restarts = Math.max(0, pod.restarts - (rollout.restartsBefore.get(pod.uid) ?? 0));
  // The scheduler's message names nodes and resources; a container's may quote what its Secrets hold.
  const message = pod.problem
    ? pod.problem.message !== undefined && pod.readsSecrets
      ? WITHHELD
      : pod.problem.message
    : pod.unschedulable?.message;
  const termination = restarts > 0 ? pod.lastTermination : undefined;
  return {
    name: pod.name,
    phase: pod.phase,
    ready: pod.ready,
    ...(pod.readySince !== undefined ? { readySince: pod.readySince } : {}),
    ...(reason !== undefined ? { reason } : {}),
    ...(pod.problem ? { container: pod.problem.container } : {}),
    ...(message !== undefined ? { message } : {}),
    restarts,
    ...(termination
      ? {
          lastTermination: {
            container: termination.container,
            ...(termination.reason !== undefined ? { reason: termination.reason } : {}),
            ...(termination.exitCode !== undefined ? { exitCode: termination.exitCode } : {}),
          },
        }
      : {}),
  };
}

/**
 * The Warning Events about `involved` since the change: an Event known when the change was made counts
 * what it added since; one that began since counts whole; one read only later (after a restart, or before
 * the first read of Events ended) that began before the change counts once if it happened again since,
 * not at all if it did not (their times have one-second resolution: the change's second counts).
 */
function warningEvidence(
  involved: readonly string[],
  readingSecrets: ReadonlySet<string>,
  rollout: Rollout,
  log: WarningLog,
): WarningEvidence[] {
  const found: WarningEvidence[] = [];
  const sinceSecond = Math.floor(rollout.since / 1000) * 1000;
  for (const uid of involved) {
    for (const warning of log.about(uid)) {
      const before = rollout.warningsBefore.get(warning.uid);
      let count: number;
      if (before !== undefined) count = warning.count - before;
      else if (warning.first >= sinceSecond) count = warning.count;
      else count = warning.last >= sinceSecond ? 1 : 0;
      if (count > 0)
        found.push({
          object: warning.object,
          reason: warning.reason,
          message: readingSecrets.has(uid) ? WITHHELD : warning.message,
          count,
        });
    }
  }
  return found
    .sort((a, b) => b.count - a.count || a.object.localeCompare(b.object))
    .slice(0, WARNINGS_LISTED);
}

function summarize(
  verdict: Judgement['verdict'],
  progress: WorkloadProgress,
  revision: Revision,
  judged: readonly { pod: PodHealth; verdict: PodVerdict }[],
  rollout: Rollout,
  now: number,
): string {
  const total = judged.length;
  const ready = judged.filter((entry) => entry.verdict === 'healthy').length;
  const restarts = judged.reduce(
    (sum, { pod }) => sum + Math.max(0, pod.restarts - (rollout.restartsBefore.get(pod.uid) ?? 0)),
    0,
  );
  const restartText = restarts > 0 ? `, ${restarts} restart${restarts === 1 ? '' : 's'}` : '';
  const failing = judged.filter((entry) => entry.verdict === 'failing').map((entry) => entry.pod);
  if (verdict === 'degraded' && failing.length === 0 && revision.failure) {
    return `its new ReplicaSet cannot create pods: ${revision.failure.message ?? revision.failure.reason ?? 'ReplicaFailure'}`;
  }
  if (failing.length > 0) {
    const reasons = new Map<string, number>();
    for (const pod of failing) {
      const reason = podReason(pod, now) ?? 'failing';
      reasons.set(reason, (reasons.get(reason) ?? 0) + 1);
    }
    const parts = [...reasons].map(([reason, count]) => `${count}/${total} pods ${reason}`);
    const last = failing
      .flatMap((pod) =>
        pod.lastTermination && pod.restarts > (rollout.restartsBefore.get(pod.uid) ?? 0)
          ? [pod.lastTermination]
          : [],
      )
      .sort((a, b) => b.at - a.at)[0];
    const lastText = last
      ? `, last ${last.reason ?? 'terminated'}${last.exitCode !== undefined ? ` (exit ${last.exitCode})` : ''}`
      : '';
    const head = verdict === 'failed' ? `${progress.detail}; ` : '';
    return `${head}${parts.join(', ')}${lastText}${restartText}`;
  }
  if (verdict === 'failed') return `${progress.detail}; ${ready}/${total} pods ready${restartText}`;
  if (verdict === 'healthy') {
    if (total === 0) return progress.detail;
    return `${ready}/${total} pods ${judged.every((entry) => entry.pod.phase === 'Succeeded') ? 'succeeded' : 'ready'}${restartText}`;
  }
  return `${progress.detail}; ${ready}/${total} pods ready${restartText}`;
}
