// What the verdicts need of one pod, taken from the pod as the API server serves it (the informer's
// store keeps it without its status), and the rules that judge it. Pods are the most numerous objects
// of a cluster: a PodHealth keeps a dozen small fields, never the pod.
//
// The rules are our own, written after the ones the field trusts (docs/outcomes.md cites them):
// - a container waiting with a reason that starts with `Err` or ends in `Error` or `BackOff`
//   (CreateContainerConfigError, ImagePullBackOff, CrashLoopBackOff) is a failing pod (Argo CD's
//   gitops-engine, pkg/health/health_pod.go; kstatus's ContainerCrashLooping), but for ErrImagePull: a
//   pull that failed once, which the kubelet retries, and which becomes ImagePullBackOff when it fails
//   again;
// - a pod that restarted since the change and is not ready is failing (gitops-engine: a running pod
//   that is not ready and has a last termination), with that termination's reason and exit code;
// - a pod the scheduler cannot place is failing once it has been so for 15 s (kstatus's
//   ScheduleWindow: a pod may wait that long for room);
// - a pod in phase Failed is failing, unless a Job owns it (the Job's own conditions say whether it
//   retries or has failed);
// - a pod Ready, or Succeeded, is healthy; any other is on its way.
import { podSpecReferences } from '../../kube/pod-references.ts';
import { isJsonObject, type JsonObject, type KubeObject } from '../../kube/types.ts';
import {
  controllerOf,
  countAt,
  labelOf,
  objectAt,
  objectsAt,
  shortTextAt,
  textAt,
  timeAt,
} from './raw-fields.ts';

/** How long a pod may wait for the scheduler before it counts as failing (kstatus's ScheduleWindow). */
export const UNSCHEDULABLE_AFTER_MS = 15_000;

/** A container's state that fails the pod: why, and which container. */
export interface ContainerProblem {
  reason: string;
  container: string;
  message: string | undefined;
}

/** The last termination of a container that restarted. */
export interface Termination {
  container: string;
  reason: string | undefined;
  exitCode: number | undefined;
  /** When it ended (ms), to tell the latest of several containers. */
  at: number;
}

/** One pod, compact. Read-only: a new one replaces it on each version of the pod. */
export interface PodHealth {
  readonly uid: string;
  readonly name: string;
  /** Its controller (a ReplicaSet, StatefulSet, DaemonSet or Job): uid and kind. */
  readonly owner: string | undefined;
  readonly ownerKind: string | undefined;
  /** `pod-template-hash` (a Deployment's) or `controller-revision-hash` (a StatefulSet's, a DaemonSet's). */
  readonly revision: string | undefined;
  /** creationTimestamp, ms (one-second resolution). */
  readonly created: number;
  readonly phase: string;
  readonly ready: boolean;
  readonly readySince: string | undefined;
  /** Restarts of all its containers, init containers included. */
  readonly restarts: number;
  readonly problem: ContainerProblem | undefined;
  /** The first container still waiting for another reason (ContainerCreating, PodInitializing). */
  readonly waiting: string | undefined;
  readonly lastTermination: Termination | undefined;
  /** The scheduler cannot place it: its message, and since when kubediff has seen it so (its clock). */
  readonly unschedulable: { message: string; since: number } | undefined;
  /** Its restartPolicy is not Always: a finite life (a Job's pod). */
  readonly finite: boolean;
  /**
   * It reads a Secret (env, envFrom, a volume): the kubelet expands such values into commands and
   * arguments, and a program or a probe may print them, so the messages about this pod may quote them.
   */
  readonly readsSecrets: boolean;
}

/** A waiting reason that fails the pod (see the top). */
export function isFailingReason(reason: string): boolean {
  if (reason === 'ErrImagePull') return false;
  return reason.startsWith('Err') || reason.endsWith('Error') || reason.endsWith('BackOff');
}

/**
 * The pod's health from the object as served; `previous` (the same pod's last health) keeps since when
 * it has been unschedulable, on kubediff's clock (`now`), which the API server's times would skew.
 */
export function podHealthOf(pod: KubeObject, previous: PodHealth | undefined, now: number): PodHealth {
  const metadata = pod.metadata as unknown as JsonObject;
  const spec = isJsonObject(pod.spec) ? pod.spec : undefined;
  const status = isJsonObject(pod.status) ? pod.status : undefined;
  const controller = controllerOf(metadata);
  const conditions = objectsAt(status, 'conditions');
  const ready = conditions.find((condition) => condition.type === 'Ready');
  const scheduled = conditions.find((condition) => condition.type === 'PodScheduled');
  const containers = [
    ...objectsAt(status, 'initContainerStatuses'),
    ...objectsAt(status, 'containerStatuses'),
  ];
  let restarts = 0;
  let problem: ContainerProblem | undefined;
  let waiting: string | undefined;
  let lastTermination: Termination | undefined;
  for (const container of containers) {
    const name = textAt(container, 'name') ?? '';
    restarts += countAt(container, 'restartCount') ?? 0;
    const waitingState = objectAt(objectAt(container, 'state'), 'waiting');
    const reason = textAt(waitingState, 'reason');
    if (reason !== undefined) {
      if (isFailingReason(reason)) {
        problem ??= { reason, container: name, message: shortTextAt(waitingState, 'message') };
      } else {
        waiting ??= reason;
      }
    }
    const terminated = objectAt(objectAt(container, 'lastState'), 'terminated');
    if (terminated) {
      const at = timeAt(terminated, 'finishedAt') ?? 0;
      if (!lastTermination || at >= lastTermination.at) {
        lastTermination = {
          container: name,
          reason: textAt(terminated, 'reason'),
          exitCode: countAt(terminated, 'exitCode'),
          at,
        };
      }
    }
  }
  const cannotPlace = scheduled?.status === 'False' && scheduled.reason === 'Unschedulable';
  return {
    uid: pod.metadata.uid,
    name: pod.metadata.name,
    owner: controller?.uid,
    ownerKind: controller?.kind,
    revision: labelOf(metadata, 'pod-template-hash') ?? labelOf(metadata, 'controller-revision-hash'),
    created: timeAt(metadata, 'creationTimestamp') ?? now,
    phase: textAt(status, 'phase') ?? 'Pending',
    ready: ready?.status === 'True',
    readySince: ready?.status === 'True' ? textAt(ready, 'lastTransitionTime') : undefined,
    restarts,
    problem,
    waiting,
    lastTermination,
    unschedulable: cannotPlace
      ? {
          message: shortTextAt(scheduled, 'message') ?? 'no node can take it',
          since: previous?.unschedulable?.since ?? now,
        }
      : undefined,
    finite: textAt(spec, 'restartPolicy') !== undefined && textAt(spec, 'restartPolicy') !== 'Always',
    readsSecrets:
      spec !== undefined &&
      podSpecReferences(spec).some(
        (reference) => reference.kind === 'Secret' && reference.type !== 'imagePullSecrets',
      ),
  };
}

/** What the rules make of one pod of a rollout. */
export type PodVerdict = 'healthy' | 'failing' | 'starting';

/**
 * The pod judged (see the top): `restartsBefore` are its restarts when the change was made (0 for a pod
 * created since), `now` is kubediff's clock.
 */
export function judgePod(pod: PodHealth, restartsBefore: number, now: number): PodVerdict {
  if (pod.problem) return 'failing';
  if (pod.phase === 'Failed' && !pod.finite) return 'failing';
  if (pod.unschedulable && now - pod.unschedulable.since >= UNSCHEDULABLE_AFTER_MS) return 'failing';
  if (pod.ready || pod.phase === 'Succeeded') return 'healthy';
  if (pod.restarts > restartsBefore && pod.lastTermination) return 'failing';
  return 'starting';
}

/** The reason that names what a pod is going through, for evidence and summaries. */
export function podReason(pod: PodHealth, now: number): string | undefined {
  if (pod.problem) return pod.problem.reason;
  if (pod.unschedulable)
    return now - pod.unschedulable.since >= UNSCHEDULABLE_AFTER_MS ? 'Unschedulable' : 'Pending';
  if (pod.phase === 'Failed' || pod.phase === 'Succeeded') return pod.phase;
  if (pod.ready) return undefined;
  if (pod.waiting) return pod.waiting;
  if (pod.lastTermination) return 'Restarted';
  return pod.phase === 'Running' ? 'NotReady' : pod.phase;
}
