// What a ConfigMap or Secret change reaches, in words (docs/used-by.md): `used by deployment/web (env
// APP_MODE: 3 pods still run the old value), cronjob/report (volume config: live)`, `read by nobody:
// DEBUG`, and for a rollout `rolls out configmap shop/app-config (changed 10:31:07Z)`. Plain text: the
// caller makes it printable (every name comes from the cluster) and colors or styles it. A caller with
// little room (a chat message) passes smaller limits than the terminal's: what is left out is counted
// (`and 497 more`).

import type { RolloutLink, UsedBy, UseVia, UsingWorkload } from '../../events/event.ts';
import { groupedCount, plural } from '../../util/count-text.ts';
import { printedTime } from '../../util/timestamp.ts';

/** Ways listed per workload before the rest is counted. */
const LISTED_WAYS = 3;

/** How many workloads, keys and rolled-out changes are named before the rest is counted. */
export interface ReachLimits {
  workloads: number;
  keys: number;
  rollsOut: number;
}

/** The terminal's: a line a person reads; `-o json` names every one. */
export const TERMINAL_LIMITS: ReachLimits = { workloads: 25, keys: 50, rollsOut: 10 };

/**
 * A piece of a line: `name` when it is the name of a workload or an object (a chat message shows it as
 * code, the terminal as it is). Every piece is text from the cluster or made from it.
 */
export interface Piece {
  text: string;
  name?: true;
}

/** The lines about an event's usedBy, in pieces: who uses it, then the keys nobody reads; none without usedBy. */
export function usedByPieces(usedBy: UsedBy | undefined, limits: ReachLimits = TERMINAL_LIMITS): Piece[][] {
  if (!usedBy) return [];
  const shown = usedBy.workloads.slice(0, limits.workloads);
  const more = usedBy.workloads.length - shown.length;
  const users: Piece[] =
    shown.length > 0
      ? [
          { text: 'used by ' },
          ...shown.flatMap((workload, index): Piece[] => [
            ...(index > 0 ? [{ text: ', ' }] : []),
            { text: workloadName(workload), name: true },
            { text: workloadDetail(workload) },
          ]),
          ...(more > 0 ? [{ text: andMore(more) }] : []),
        ]
      : [{ text: more > 0 ? `used by ${plural(more, 'workload')}` : 'used by nothing kubediff watches' }];
  if (usedBy.incomplete)
    users.push({
      text: ` (the index is incomplete: ${usedBy.incomplete === 'limit' ? 'it is full' : 'still listing'})`,
    });
  const lines = [users];
  const unread = usedBy.unreadKeys ?? [];
  if (unread.length > 0) {
    const keys = unread.slice(0, limits.keys);
    lines.push([{ text: `read by nobody: ${keys.join(', ')}${andMore(unread.length - keys.length)}` }]);
  }
  return lines;
}

/** The lines about an event's usedBy: who uses it, then the keys nobody reads; none without usedBy. */
export function usedByLines(usedBy: UsedBy | undefined, limits: ReachLimits = TERMINAL_LIMITS): string[] {
  return usedByPieces(usedBy, limits).map(joined);
}

/** The line about a rollout's rollsOut, in pieces; none without it. */
export function rollsOutPieces(
  links: readonly RolloutLink[] | undefined,
  limits: ReachLimits = TERMINAL_LIMITS,
): Piece[][] {
  if (!links?.length) return [];
  const shown = links.slice(0, limits.rollsOut);
  return [
    [
      { text: 'rolls out ' },
      ...shown.flatMap((link, index): Piece[] => {
        const { kind, namespace, name } = link.object;
        return [
          ...(index > 0 ? [{ text: ', ' }] : []),
          { text: `${kind.toLowerCase()} ${namespace ? `${namespace}/` : ''}${name}`, name: true },
          { text: ` (changed ${printedTime(link.time)})` },
        ];
      }),
      ...(links.length > shown.length ? [{ text: andMore(links.length - shown.length) }] : []),
    ],
  ];
}

/** The line about a rollout's rollsOut; none without it. */
export function rollsOutLines(
  links: readonly RolloutLink[] | undefined,
  limits: ReachLimits = TERMINAL_LIMITS,
): string[] {
  return rollsOutPieces(links, limits).map(joined);
}

function joined(pieces: readonly Piece[]): string {
  return pieces.map((piece) => piece.text).join('');
}

/** ` and 497 more`, or '' for none. */
function andMore(count: number): string {
  return count > 0 ? ` and ${groupedCount(count)} more` : '';
}

/** `deployment/web`. */
function workloadName(workload: UsingWorkload): string {
  return `${workload.object.kind.toLowerCase()}/${workload.object.name}`;
}

/** ` (env APP_MODE: 3 pods still run the old value)`: how it uses it, and whether that is live. */
function workloadDetail(workload: UsingWorkload): string {
  const ways = workload.via.slice(0, LISTED_WAYS).map(wayText);
  if (workload.via.length > LISTED_WAYS) ways.push(`${workload.via.length - LISTED_WAYS} more`);
  return ` (${ways.join(', ')}${liveText(workload)})`;
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
