// One followed rollout: a change to a workload's spec (or its creation, or a Job's run) that waits for
// its verdict, with what it needs to judge only what the change did: the generation to wait for, and the
// restarts and Warning counts of the workload's objects when it was made (docs/outcomes.md).
import type { ChangeEvent } from '../event.ts';
import type { WorkloadKind } from './workload-health.ts';

export interface Rollout {
  /** The cluster and the workload's uid: one open rollout per workload. */
  readonly key: string;
  readonly cluster: string | undefined;
  readonly kind: WorkloadKind;
  /** The workload's uid. */
  readonly workload: string;
  /** The change that opened it: the OUTCOME's object, owner, by and id come from it. */
  readonly change: ChangeEvent;
  /** When that change was seen (ms): `after` counts from it; pods created since are the change's. */
  readonly since: number;
  /** The ids of the events it follows: the change, and the scales that joined it. */
  readonly follows: string[];
  /** The workload's generation to wait for (metadata.generation when the change was seen). */
  generation: number | undefined;
  /** Restarts of each pod of the workload when the change was made (a pod not listed: 0). */
  readonly restartsBefore: Map<string, number>;
  /** Counts of each Warning Event about the workload's objects when the change was made. */
  readonly warningsBefore: Map<string, number>;
  /** Opened again after a restart, from the history: what happened before is partly unknown. */
  readonly resumed: boolean;
  /** When a pod's state needs another look without any news (an unschedulable pod's 15 s), ms. */
  recheckAt: number | undefined;
}

export function rolloutKey(cluster: string | undefined, workload: string): string {
  return `${cluster ?? ''}\u0000${workload}`;
}

/**
 * Whether `event` (a reported change of a workload) starts a rollout to follow: its creation, a Job's
 * run, or an update of its spec. A change of metadata alone (a label, the controller's revision
 * annotation) rolls nothing out; nor does the inventory of --initial (`inventory`).
 */
export function startsRollout(event: ChangeEvent, kind: WorkloadKind, inventory: boolean): boolean {
  if (event.type === 'ADDED') return !inventory;
  if (event.type !== 'UPDATED' || kind === 'Job') return false;
  return (event.changes ?? []).some((change) => change.path.startsWith('/spec/'));
}

/** An update of `/spec/replicas` alone: a scale, which joins the open rollout rather than ending it. */
export function isScaleOnly(event: ChangeEvent): boolean {
  const changes = event.changes ?? [];
  return (
    event.type === 'UPDATED' &&
    changes.some((change) => change.path === '/spec/replicas') &&
    changes.every((change) => change.path === '/spec/replicas' || !change.path.startsWith('/spec/'))
  );
}
