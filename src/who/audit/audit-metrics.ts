// The audit webhook and the join (--audit-listen, docs/audit.md): requests by outcome, changes joined to
// their record, those that went on without, and the audit records' bounds. Read at each scrape; zero
// without --audit-listen. The join's own bound (changes waiting) is the join's metric, whatever its
// sources (who-metrics.ts).
import { Counter, Gauge } from 'prom-client';
import type { MetricsRegistration } from '../../util/metrics-registration.ts';
import { WEBHOOK_OUTCOMES, type WebhookOutcome } from '../listener/webhook-outcomes.ts';
import type { WhoJoinStats } from '../who-join.ts';
import type { AuditSourceStats } from './audit-match.ts';

export interface AuditSource {
  requests: () => ReadonlyMap<WebhookOutcome, number>;
  join: () => WhoJoinStats;
  records: () => AuditSourceStats;
}

export function registerAuditMetrics(
  registration: MetricsRegistration,
  source: () => AuditSource | undefined,
): void {
  const { registers } = registration;
  const join = () => source()?.join();
  const records = () => source()?.records();
  new Counter({
    name: 'kubediff_audit_requests_total',
    help: 'Requests to the audit webhook, by outcome: accepted, unauthorized (401), forbidden (403), bad_request, too_large, busy, not_allowed, timeout, internal_error.',
    labelNames: ['outcome'],
    registers,
    collect() {
      const requests = source()?.requests();
      if (!requests) return;
      for (const outcome of WEBHOOK_OUTCOMES) {
        registration.incrementTo(
          this,
          { outcome },
          requests.get(outcome) ?? 0,
          `audit-requests\u0000${outcome}`,
        );
      }
    },
  });
  new Counter({
    name: 'kubediff_audit_events_joined_total',
    help: 'Changes that got their audit record (by.user), by match: exact (uid and resourceVersion) or nearest (name and time).',
    labelNames: ['match'],
    registers,
    collect() {
      const stats = records();
      if (!stats) return;
      registration.incrementTo(this, { match: 'exact' }, stats.joinedExact, 'audit-exact');
      registration.incrementTo(this, { match: 'nearest' }, stats.joinedNearest, 'audit-nearest');
    },
  });
  new Counter({
    name: 'kubediff_audit_events_unmatched_total',
    help: 'Changes that waited --audit-wait for their audit record and went on without user.',
    registers,
    collect() {
      registration.incrementTo(this, {}, join()?.unmatched ?? 0, 'audit-unmatched');
    },
  });
  new Gauge({
    name: 'kubediff_audit_records',
    help: 'Audit records kept for a change still to come (bounded by audit.maxRecords).',
    registers,
    collect() {
      this.set(records()?.records ?? 0);
    },
  });
  new Counter({
    name: 'kubediff_audit_records_dropped_total',
    help: 'Unmatched audit records dropped (the oldest) because audit.maxRecords were kept.',
    registers,
    collect() {
      registration.incrementTo(this, {}, records()?.recordsDropped ?? 0, 'audit-dropped');
    },
  });
  new Counter({
    name: 'kubediff_audit_records_duplicate_total',
    help: 'Audit records received a second time (from the API server and from a peer) and dropped: each counts once.',
    registers,
    collect() {
      registration.incrementTo(this, {}, records()?.recordsDuplicate ?? 0, 'audit-duplicate');
    },
  });
}
