// What a restart must not lose (docs/outcomes.md, "With `--state`: the history"): the rollouts the previous run was
// following when it stopped. They are read from the history --state recorded: within twice the bound of
// a verdict, each workload's last change that opens a rollout (and the scales that joined it), unless an
// OUTCOME follows it or the workload was deleted since. The engine follows them again (resume), judged by
// what the cluster shows now; one whose bound passed while kubediff was stopped is reported `unknown`.

import { type ChangeEvent, isChange } from '../events/event.ts';
import type { PendingRollout } from '../events/outcomes/outcome-engine.ts';
import { isScaleOnly, startsRollout } from '../events/outcomes/rollout.ts';
import { WORKLOAD_KINDS, type WorkloadKind } from '../events/outcomes/workload-health.ts';
import type { StateLocation } from '../state/open.ts';
import { openHistory } from '../state/open.ts';
import { isoTimestamp } from '../util/timestamp.ts';

/** The workloads' resources, as the history names them, and their kinds. */
const RESOURCES: readonly [string, WorkloadKind][] = [...WORKLOAD_KINDS].map(([key, kind]) => {
  const [group = '', resource = ''] = key.split('/');
  return [`${resource}.${group}`, kind];
});

/** Per cluster (its events' `cluster`), the rollouts left without an OUTCOME. */
export async function pendingRollouts(
  state: StateLocation,
  clusters: readonly string[],
  options: { timeoutMs: number; now: number },
): Promise<Map<string, PendingRollout[]>> {
  const found = new Map<string, PendingRollout[]>();
  const db = await openHistory(state);
  try {
    const since = isoTimestamp(options.now - 2 * options.timeoutMs);
    for (const cluster of clusters) {
      const pending: PendingRollout[] = [];
      for (const [resource, kind] of RESOURCES) {
        pending.push(...(await pendingOf(db, { cluster, resource, kind, since })));
      }
      if (pending.length > 0) found.set(cluster, pending);
    }
  } finally {
    await db.close();
  }
  return found;
}

async function pendingOf(
  db: Awaited<ReturnType<typeof openHistory>>,
  where: { cluster: string; resource: string; kind: WorkloadKind; since: string },
): Promise<PendingRollout[]> {
  const open = new Map<string, PendingRollout>();
  const settled = new Set<string>();
  let after: string | undefined;
  do {
    const page = await db.history({
      resource: where.resource,
      since: where.since,
      clusters: [where.cluster],
      ...(after !== undefined ? { after } : {}),
    });
    for (const event of page.events) {
      if (!isChange(event)) {
        for (const id of event.follows) settled.add(id);
        continue;
      }
      follow(open, event, where.kind);
    }
    after = page.next;
  } while (after !== undefined);
  return [...open.values()].filter(
    (rollout) => !settled.has(rollout.change.id) && !rollout.joined.some((id) => settled.has(id)),
  );
}

/** What the engine did with `event` live (OutcomeEngine.changeProcessed), replayed. */
function follow(open: Map<string, PendingRollout>, event: ChangeEvent, kind: WorkloadKind): void {
  const uid = event.object.uid;
  if (event.type === 'DELETED') {
    open.delete(uid);
    return;
  }
  if (!startsRollout(event, kind, false)) return;
  const current = open.get(uid);
  if (current && isScaleOnly(event)) current.joined.push(event.id);
  else open.set(uid, { change: event, kind, joined: [] });
}
