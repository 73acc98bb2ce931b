// Which recorded type a kubectl name means, in a history (`history deploy`, `show deploy/web`): resolved
// against the types the history recorded with their discovery, then against the names its events were
// recorded under (a type whose CRD is gone is still in the history under its qualified name).
import { parseResourceName, resolveResourceName } from '../kube/resource-names.ts';
import type { HistoryReader } from '../state/store.ts';
import { UsageError } from '../util/errors.ts';

export interface RecordedType {
  /** The qualified name the history uses: deployments.apps, configmaps. */
  resource: string;
  /** From the recorded discovery; undefined for a type known only from its events. */
  namespaced: boolean | undefined;
}

/** `deploy`, `deployments`, `deployments.apps`, `widgets.example.com` → the recorded type. */
export async function resolveRecordedType(db: HistoryReader, typed: string): Promise<RecordedType> {
  const name = parseResourceName(typed);
  const types = await db.recordedTypes();
  const [match] = resolveResourceName(name, types);
  if (match) {
    return {
      resource: match.group === '' ? match.resource : `${match.resource}.${match.group}`,
      namespaced: match.namespaced,
    };
  }
  const recorded = await db.historyResources();
  const qualified = name.group === undefined ? name.name : `${name.name}.${name.group}`;
  const found =
    recorded.find((resource) => resource === qualified) ??
    (name.group === undefined
      ? recorded.find((resource) => resource.split('.')[0] === name.name)
      : undefined);
  if (found) return { resource: found, namespaced: undefined };
  throw new UsageError(
    `unknown resource type "${typed}": ${db.label} records no such type; use a name such as deployments or widgets.example.com.`,
  );
}
