/// <reference lib="dom" />
// What one row of the events table says: what changed (the first changes as `path: from → to`, the
// whole text kept for hover and focus while the cell shows what fits), and who (the user when known,
// else the field manager).
import type { EventSummary, SummaryChange } from '../../state/timeline-reader.ts';

/** `/spec/replicas: 2 → 5`; `∅` for a side that was not there (values arrive as JSON text). */
export function summaryChangeText(change: SummaryChange): string {
  return `${change.path}: ${change.from ?? '∅'} → ${change.to ?? '∅'}`;
}

/** The row's Changes cell: its first changes, and how many more it has. */
export function changesText(event: Pick<EventSummary, 'type' | 'changes' | 'first'>): string {
  if (event.type !== 'UPDATED') return '';
  const first = event.first ?? [];
  const shown = first.map(summaryChangeText).join('; ');
  const more = event.changes - first.length;
  if (!shown) return event.changes > 0 ? `${event.changes} changes` : '';
  return more > 0 ? `${shown}; +${more} more` : shown;
}

/** What the rollout an event started came to, in words (`degraded: 3/3 pods CrashLoopBackOff`); '' when unknown yet. */
export function outcomeText(event: Pick<EventSummary, 'outcome'>): string {
  if (!event.outcome) return '';
  const { verdict, summary } = event.outcome;
  return summary ? `${verdict}: ${summary}` : verdict;
}

/** The worst verdict among events (a story's): failed, then degraded, unknown, superseded, healthy. */
export function worstVerdict(events: readonly Pick<EventSummary, 'outcome'>[]): string | undefined {
  const order = ['failed', 'degraded', 'unknown', 'superseded', 'healthy'];
  const verdicts = events.flatMap((event) => (event.outcome ? [event.outcome.verdict] : []));
  return order.find((verdict) => verdicts.includes(verdict as never));
}

/** The row's By cell: the user when the watch knew it, else the field manager. */
export function byText(event: Pick<EventSummary, 'user' | 'manager'>): string {
  return event.user || event.manager || '';
}
