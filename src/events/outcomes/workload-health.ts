// What the verdicts need of a workload (Deployment, StatefulSet, DaemonSet, Job) and of a Deployment's
// ReplicaSets, taken from the objects as served (the informer's store keeps them without status), and the
// rules that say where a workload's rollout stands. Our own rules, after those of Argo CD's gitops-engine
// (pkg/health: health_deployment.go, health_statefulset.go, health_daemonset.go, health_job.go) and of
// kstatus (sigs.k8s.io/cli-utils pkg/kstatus/status/core.go), which both follow kubectl's `rollout
// status`; docs/outcomes.md cites them:
//
// - nothing is judged before the controller has observed the change (status.observedGeneration at least
//   the generation followed);
// - Deployment: paused waits; a Progressing condition with reason ProgressDeadlineExceeded is a failed
//   rollout; fewer updated replicas than desired, old replicas still terminating, or fewer available
//   than updated is a rollout on its way; else it is done;
// - StatefulSet: OnDelete is done once observed (pods change only when deleted); fewer ready replicas
//   than desired is on its way; with a partition, done once the replicas above it are updated; else done
//   when the current revision is the update revision;
// - DaemonSet: OnDelete is done once observed; fewer updated or available pods than desired is on its
//   way; else done;
// - Job: a Failed condition is a failed run, Complete a done one, Suspended waits.
import { isJsonObject, type JsonObject, type KubeObject } from '../../kube/types.ts';
import type { ConditionEvidence } from '../event.ts';
import { controllerOf, countAt, flagAt, objectAt, objectsAt, shortTextAt, textAt } from './raw-fields.ts';

export type WorkloadKind = 'Deployment' | 'StatefulSet' | 'DaemonSet' | 'Job';

/** The kinds whose changes are followed, by API group (their `kind` is the type's). */
export const WORKLOAD_KINDS: ReadonlyMap<string, WorkloadKind> = new Map([
  ['apps/deployments', 'Deployment'],
  ['apps/statefulsets', 'StatefulSet'],
  ['apps/daemonsets', 'DaemonSet'],
  ['batch/jobs', 'Job'],
]);

/** One workload, compact. Read-only: a new one replaces it on each version. */
export interface WorkloadHealth {
  readonly kind: WorkloadKind;
  readonly uid: string;
  readonly name: string;
  readonly generation: number;
  readonly observedGeneration: number;
  readonly paused: boolean;
  /** Replicas desired: spec.replicas (1 when unset), a DaemonSet's desiredNumberScheduled, a Job's completions. */
  readonly desired: number;
  readonly replicas: number;
  readonly updated: number;
  readonly ready: number;
  readonly available: number;
  /** A Job's failed pods (status.failed); 0 for the others. */
  readonly failedPods: number;
  /** `OnDelete`, `RollingUpdate`, `Recreate`… */
  readonly strategy: string | undefined;
  /** A StatefulSet's rollingUpdate.partition. */
  readonly partition: number | undefined;
  /** A Deployment's revision annotation; a StatefulSet's updateRevision. */
  readonly revision: string | undefined;
  /** A StatefulSet's currentRevision. */
  readonly currentRevision: string | undefined;
  readonly conditions: readonly ConditionEvidence[];
}

/** A Deployment's ReplicaSet, compact. */
export interface ReplicaSetHealth {
  readonly uid: string;
  readonly name: string;
  /** Its Deployment's uid. */
  readonly owner: string | undefined;
  /** Its `deployment.kubernetes.io/revision`: the one its Deployment names is the new one. */
  readonly revision: string | undefined;
  /** Its ReplicaFailure condition, when True (pods it cannot create: a quota, a webhook). */
  readonly failure: ConditionEvidence | undefined;
}

const REVISION_ANNOTATION = 'deployment.kubernetes.io/revision';

export function workloadHealthOf(kind: WorkloadKind, object: KubeObject): WorkloadHealth {
  const metadata = object.metadata as unknown as JsonObject;
  const spec = isJsonObject(object.spec) ? object.spec : undefined;
  const status = isJsonObject(object.status) ? object.status : undefined;
  const strategyField = kind === 'Deployment' ? 'strategy' : 'updateStrategy';
  const strategy = objectAt(spec, strategyField);
  const counts = countsOf(kind, spec, status);
  return {
    kind,
    uid: object.metadata.uid,
    name: object.metadata.name,
    generation: countAt(metadata, 'generation') ?? 0,
    observedGeneration: countAt(status, 'observedGeneration') ?? 0,
    paused: kind === 'Deployment' && flagAt(spec, 'paused'),
    ...counts,
    strategy: textAt(strategy, 'type'),
    partition: countAt(objectAt(strategy, 'rollingUpdate'), 'partition'),
    revision:
      kind === 'Deployment'
        ? textAt(objectAt(metadata, 'annotations'), REVISION_ANNOTATION)
        : textAt(status, 'updateRevision'),
    currentRevision: textAt(status, 'currentRevision'),
    conditions: objectsAt(status, 'conditions').map(conditionOf),
  };
}

function countsOf(
  kind: WorkloadKind,
  spec: JsonObject | undefined,
  status: JsonObject | undefined,
): Pick<WorkloadHealth, 'desired' | 'replicas' | 'updated' | 'ready' | 'available' | 'failedPods'> {
  switch (kind) {
    case 'DaemonSet': {
      const desired = countAt(status, 'desiredNumberScheduled') ?? 0;
      return {
        desired,
        replicas: countAt(status, 'currentNumberScheduled') ?? 0,
        updated: countAt(status, 'updatedNumberScheduled') ?? 0,
        ready: countAt(status, 'numberReady') ?? 0,
        available: countAt(status, 'numberAvailable') ?? 0,
        failedPods: 0,
      };
    }
    case 'Job': {
      // A Job's pods: `replicas` are those running, `updated` and `available` those that succeeded.
      const succeeded = countAt(status, 'succeeded') ?? 0;
      return {
        desired: countAt(spec, 'completions') ?? 1,
        replicas: countAt(status, 'active') ?? 0,
        updated: succeeded,
        ready: countAt(status, 'ready') ?? 0,
        available: succeeded,
        failedPods: countAt(status, 'failed') ?? 0,
      };
    }
    default:
      return {
        desired: countAt(spec, 'replicas') ?? 1,
        replicas: countAt(status, 'replicas') ?? 0,
        updated: countAt(status, 'updatedReplicas') ?? 0,
        ready: countAt(status, 'readyReplicas') ?? 0,
        available: countAt(status, 'availableReplicas') ?? 0,
        failedPods: 0,
      };
  }
}

export function replicaSetHealthOf(object: KubeObject): ReplicaSetHealth {
  const metadata = object.metadata as unknown as JsonObject;
  const status = isJsonObject(object.status) ? object.status : undefined;
  const failure = objectsAt(status, 'conditions').find(
    (condition) => condition.type === 'ReplicaFailure' && condition.status === 'True',
  );
  const controller = controllerOf(metadata);
  return {
    uid: object.metadata.uid,
    name: object.metadata.name,
    owner: controller?.kind === 'Deployment' ? controller.uid : undefined,
    revision: textAt(objectAt(metadata, 'annotations'), REVISION_ANNOTATION),
    failure: failure ? conditionOf(failure) : undefined,
  };
}

function conditionOf(condition: JsonObject): ConditionEvidence {
  const reason = textAt(condition, 'reason');
  const message = shortTextAt(condition, 'message');
  return {
    type: textAt(condition, 'type') ?? '',
    status: textAt(condition, 'status') ?? '',
    ...(reason !== undefined ? { reason } : {}),
    ...(message !== undefined ? { message } : {}),
  };
}

/** Where a workload's rollout stands (see the top), and why, in a few words. */
export type WorkloadProgress =
  | { state: 'done'; detail: string }
  | { state: 'failed'; detail: string }
  | { state: 'waiting'; detail: string }
  | { state: 'progressing'; detail: string };

/** The workload judged against the generation followed (see the top). */
export function judgeWorkload(workload: WorkloadHealth, generation: number): WorkloadProgress {
  if (workload.kind === 'Job') return judgeJob(workload);
  if (workload.paused) return { state: 'waiting', detail: 'the Deployment is paused' };
  if (workload.observedGeneration < generation) {
    return { state: 'progressing', detail: 'its controller has not yet observed the change' };
  }
  switch (workload.kind) {
    case 'Deployment':
      return judgeDeployment(workload);
    case 'StatefulSet':
      return judgeStatefulSet(workload);
    case 'DaemonSet':
      return judgeDaemonSet(workload);
  }
}

function judgeDeployment(workload: WorkloadHealth): WorkloadProgress {
  const progressing = workload.conditions.find((condition) => condition.type === 'Progressing');
  if (progressing?.reason === 'ProgressDeadlineExceeded') {
    return { state: 'failed', detail: progressing.message ?? 'its progress deadline passed' };
  }
  if (workload.updated < workload.desired) {
    return { state: 'progressing', detail: `${workload.updated} of ${workload.desired} replicas updated` };
  }
  if (workload.replicas > workload.updated) {
    return {
      state: 'progressing',
      detail: `${workload.replicas - workload.updated} old replicas terminating`,
    };
  }
  if (workload.available < workload.updated) {
    return {
      state: 'progressing',
      detail: `${workload.available} of ${workload.updated} replicas available`,
    };
  }
  return { state: 'done', detail: `${workload.available}/${workload.desired} available` };
}

function judgeStatefulSet(workload: WorkloadHealth): WorkloadProgress {
  if (workload.strategy === 'OnDelete') {
    return { state: 'done', detail: 'OnDelete: its pods change when they are deleted' };
  }
  if (workload.ready < workload.desired) {
    return { state: 'progressing', detail: `${workload.ready} of ${workload.desired} replicas ready` };
  }
  if (workload.partition !== undefined && workload.partition > 0) {
    const due = Math.max(0, workload.desired - workload.partition);
    return workload.updated < due
      ? { state: 'progressing', detail: `${workload.updated} of ${due} replicas above the partition updated` }
      : { state: 'done', detail: `${workload.updated} replicas above the partition updated` };
  }
  if (workload.revision !== workload.currentRevision) {
    return { state: 'progressing', detail: `${workload.updated} of ${workload.desired} replicas updated` };
  }
  return { state: 'done', detail: `${workload.ready}/${workload.desired} ready` };
}

function judgeDaemonSet(workload: WorkloadHealth): WorkloadProgress {
  if (workload.strategy === 'OnDelete') {
    return { state: 'done', detail: 'OnDelete: its pods change when they are deleted' };
  }
  if (workload.updated < workload.desired) {
    return { state: 'progressing', detail: `${workload.updated} of ${workload.desired} pods updated` };
  }
  if (workload.available < workload.desired) {
    return { state: 'progressing', detail: `${workload.available} of ${workload.desired} pods available` };
  }
  return { state: 'done', detail: `${workload.available}/${workload.desired} available` };
}

function judgeJob(workload: WorkloadHealth): WorkloadProgress {
  const holds = (type: string) =>
    workload.conditions.find((condition) => condition.type === type && condition.status === 'True');
  const failed = holds('Failed');
  if (failed) return { state: 'failed', detail: failed.message ?? failed.reason ?? 'the Job failed' };
  if (holds('Complete'))
    return { state: 'done', detail: `${workload.updated}/${workload.desired} succeeded` };
  if (holds('Suspended')) return { state: 'waiting', detail: 'the Job is suspended' };
  return {
    state: 'progressing',
    detail: `${workload.replicas} running, ${workload.updated} succeeded, ${workload.failedPods} failed`,
  };
}
