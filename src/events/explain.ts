// --explain: one line on stderr per event and per place it could go (the watch's own rules, then each
// sink), saying whether it was delivered and which rule decided.

import { type ChangeEvent, qualifiedResource } from './event.ts';
import type { FilterVerdict } from './filter.ts';

/**
 * One --explain line: the event, where it went (a sink, or `all sinks` for the watch's own rules) and why.
 * `explain: UPDATED deployments.apps shop/web 6f1c…:48213 → webhook audit: delivered (resource deploy)`.
 */
export function explainLine(event: ChangeEvent, target: string, verdict: FilterVerdict): string {
  const { namespace, name } = event.object;
  const subject = `${event.type} ${qualifiedResource(event)} ${namespace ? `${namespace}/` : ''}${name} ${event.id}`;
  const outcome = verdict.deliver
    ? `delivered (${verdict.reason}${verdict.event ? `; ${verdict.event.changes?.length ?? 0} of ${event.changes?.length ?? 0} changes kept` : ''})`
    : `dropped by ${verdict.rule}: ${verdict.reason}`;
  return `explain: ${subject} → ${target}: ${outcome}`;
}
