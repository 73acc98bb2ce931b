// What a ConfigMap or Secret change reaches, in words (docs/used-by.md): `used by deployment/web (env
// APP_MODE: 3 pods still run the old value), cronjob/report (volume config)`, `read by nobody: DEBUG`,
// and for a rollout `rolls out configmap shop/app-config (changed 10:31:07Z)`. Plain text: the caller
// makes it printable (every name comes from the cluster) and colors it.

import type { RolloutLink, UsedBy, UseVia, UsingWorkload } from '../events/event.ts';
import { plural } from '../util/count-text.ts';
import { printedTime } from '../util/timestamp.ts';

/** Ways listed per workload before the rest is counted. */
const LISTED_WAYS = 3;

/** The lines about an event's usedBy: who uses it, then the keys nobody reads; none without usedBy. */
export function usedByLines(usedBy: UsedBy | undefined): string[] {
  if (!usedBy) return [];
  const incomplete = usedBy.incomplete
    ? ` (the index is incomplete: ${usedBy.incomplete === 'limit' ? 'it is full' : 'still listing'})`
    : '';
  const users =
    usedBy.workloads.length === 0
      ? 'used by nothing kubediff watches'
      : `used by ${usedBy.workloads.map(workloadText).join(', ')}`;
  const lines = [users + incomplete];
  if (usedBy.unreadKeys?.length) lines.push(`read by nobody: ${usedBy.unreadKeys.join(', ')}`);
  return lines;
}

/** The line about a rollout's rollsOut; none without it. */
export function rollsOutLines(links: readonly RolloutLink[] | undefined): string[] {
  if (!links?.length) return [];
  const changes = links.map(
    (link) =>
      `${link.object.kind.toLowerCase()} ${link.object.namespace ? `${link.object.namespace}/` : ''}${link.object.name} (changed ${printedTime(link.time)})`,
  );
  return [`rolls out ${changes.join(', ')}`];
}

/** `deployment/web (env APP_MODE: 3 pods still run the old value)`. */
export function workloadText(workload: UsingWorkload): string {
  const ways = workload.via.slice(0, LISTED_WAYS).map(wayText);
  if (workload.via.length > LISTED_WAYS) ways.push(`${workload.via.length - LISTED_WAYS} more`);
  const name = `${workload.object.kind.toLowerCase()}/${workload.object.name}`;
  return `${name} (${ways.join(', ')}${liveText(workload)})`;
}

function liveText(workload: UsingWorkload): string {
  if (workload.keys.length === 0) return ': reads none of the changed keys';
  const old = workload.pods?.old ?? 0;
  if (workload.live === false)
    return `: ${plural(old, 'pod')} still run${old === 1 ? 's' : ''} the old value`;
  if (workload.live === 'eventually')
    return `: ${plural(old, 'pod')} see${old === 1 ? 's' : ''} it at the kubelet's next sync`;
  if (workload.live === true) return ': live';
  return '';
}

/** `env APP_MODE`, `envFrom`, `volume config (subPath)`, `imagePullSecrets`, `serviceAccount builder`, in `init container setup`. */
export function wayText(via: UseVia): string {
  const what =
    via.type === 'env'
      ? `env ${via.env ?? via.key ?? ''}`
      : via.type === 'envFrom'
        ? via.prefix
          ? `envFrom ${via.prefix}*`
          : 'envFrom'
        : via.type === 'volume' || via.type === 'projected'
          ? `${via.type} ${via.volume ?? ''}${via.subPath ? ' (subPath)' : ''}`
          : via.type === 'serviceAccount'
            ? `serviceAccount ${via.serviceAccount ?? ''}`
            : via.type;
  const where =
    via.initContainer !== undefined
      ? ` in init container ${via.initContainer}`
      : via.ephemeralContainer !== undefined
        ? ` in ephemeral container ${via.ephemeralContainer}`
        : '';
  return `${what.trim()}${where}${via.optional ? ' (optional)' : ''}`;
}
