// The metrics of the admission webhook (--admission-listen, docs/who.md) and of the records the replicas
// post each other (--peers): registered only when they run. Counts kept by the server, the join and the
// forwarder are read on each scrape; the answer latency is observed as each answer goes out.

import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { AdmissionSourceStats } from './admission/admission-match.ts';
import { IGNORE_REASONS, type IgnoreReason } from './admission/admission-review.ts';
import type { AdmissionObserver } from './admission/admission-server.ts';
import { WEBHOOK_OUTCOMES, type WebhookOutcome } from './listener/webhook-outcomes.ts';
import { PEER_RECORD_OUTCOMES, type PeerRecordOutcome } from './peers/peer-forwarder.ts';
import type { WhoJoinStats } from './who-join.ts';

/** The admission webhook as the metrics read it. */
export interface ObservedAdmission {
  server: {
    stats(): {
      requests: ReadonlyMap<WebhookOutcome, number>;
      ignored: ReadonlyMap<IgnoreReason, number>;
    };
    observe(observer: AdmissionObserver): void;
  };
  /** Where large reviews are read (admission-thread.ts). */
  thread: { readonly inFlight: number; readonly maxBytes: number };
  join: () => WhoJoinStats;
  records: () => AdmissionSourceStats;
}

/** The peers as the metrics read them. */
export interface ObservedPeers {
  forwarder: { stats(): { records: ReadonlyMap<PeerRecordOutcome, number>; peers: number } };
  /** The listeners that take the peers' records. */
  listeners: readonly { stats(): { peerRequests: ReadonlyMap<WebhookOutcome, number> } }[];
}

/** A counter whose value is a total kept elsewhere, read at each scrape. */
function totals<L extends string>(
  registry: Registry,
  name: string,
  help: string,
  labelNames: readonly L[],
  read: () => Iterable<[Partial<Record<L, string>>, number]>,
): void {
  new Counter({
    name,
    help,
    labelNames: [...labelNames],
    registers: [registry],
    collect() {
      this.reset();
      for (const [labels, value] of read()) this.inc(labels, value);
    },
  });
}

/**
 * The join of who made each change, whatever its sources (the audit webhook, the admission webhook):
 * the changes waiting for a record and those sent on early at its bound (docs/who.md, "Limits").
 */
export function registerWhoJoinMetrics(registry: Registry, join: () => WhoJoinStats): void {
  new Gauge({
    name: 'kubediff_who_pending_events',
    help: 'Changes waiting now for their audit record or admission review (bounded by audit.maxPending, 10,000 by default).',
    registers: [registry],
    collect() {
      this.set(join().pending);
    },
  });
  new Gauge({
    name: 'kubediff_who_pending_bytes',
    help: 'Bytes of the changes waiting now for their audit record or admission review (bounded by a share of the heap, docs/deploy.md "Memory").',
    registers: [registry],
    collect() {
      this.set(join().pendingBytes);
    },
  });
  totals(
    registry,
    'kubediff_who_pending_released_total',
    'Changes sent on at once, without user, because audit.maxPending (10,000 by default) changes, or their bytes bound, were waiting for a record.',
    [],
    () => [[{}, join().releasedAtLimit]],
  );
}

export function registerAdmissionMetrics(registry: Registry, admission: ObservedAdmission): void {
  totals(
    registry,
    'kubediff_admission_reviews_total',
    'Requests to the admission webhook, by outcome: accepted (answered allowed), unauthorized (401), forbidden (403), bad_request, too_large, busy, not_allowed, timeout (408), internal_error. Every one lets the write through.',
    ['outcome'],
    () => {
      const { requests } = admission.server.stats();
      return WEBHOOK_OUTCOMES.map((outcome) => [{ outcome }, requests.get(outcome) ?? 0]);
    },
  );
  totals(
    registry,
    'kubediff_admission_reviews_ignored_total',
    'Admission reviews answered and not kept, by reason: dry_run, operation (CONNECT), no_object (no uid: a subresource create), not_watched (a resource kubediff does not watch), digest_failed (an object that cannot be digested, e.g. nested too deep: it could not be checked); of large reviews answered from their head: unreadable (not an AdmissionReview once parsed), thread_busy (the thread that reads them held its bound), thread_failed (it stopped: its heap limit).',
    ['reason'],
    () => {
      const { ignored } = admission.server.stats();
      return IGNORE_REASONS.map((reason) => [{ reason }, ignored.get(reason) ?? 0]);
    },
  );
  totals(
    registry,
    'kubediff_admission_events_joined_total',
    'Changes by how the admission webhook named their user: exact, ambiguous (reviews naming different users: nobody named), none (waited and went on without a record of any source).',
    ['match'],
    () => {
      const records = admission.records();
      return [
        [{ match: 'exact' }, records.joinedExact],
        [{ match: 'ambiguous' }, records.joinedAmbiguous],
        [{ match: 'none' }, admission.join().unmatched],
      ];
    },
  );
  totals(
    registry,
    'kubediff_admission_records_expired_total',
    'Admission reviews that named no change within their time (60s): writes that failed or changed nothing reportable.',
    [],
    () => [[{}, admission.records().recordsExpired]],
  );
  totals(
    registry,
    'kubediff_admission_records_superseded_total',
    'Admission reviews dropped because their change had gone by (the losing attempt of a conflict, a forgery) or because they came twice.',
    [],
    () => [[{}, admission.records().recordsSuperseded]],
  );
  totals(
    registry,
    'kubediff_admission_records_dropped_total',
    'Admission reviews dropped (the oldest) because admission.maxRecords were kept.',
    [],
    () => [[{}, admission.records().recordsDropped]],
  );
  new Gauge({
    name: 'kubediff_admission_records',
    help: 'Admission reviews kept for a change still to come (bounded by admission.maxRecords).',
    registers: [registry],
    collect() {
      this.set(admission.records().records);
    },
  });
  new Gauge({
    name: 'kubediff_admission_thread_bytes',
    help: `Bytes of large admission reviews being read for, waiting for or in the thread that reads them (bounded by ${admission.thread.maxBytes}; beyond, a review is dropped: kubediff_admission_reviews_ignored_total{reason="thread_busy"}).`,
    registers: [registry],
    collect() {
      this.set(admission.thread.inFlight);
    },
  });
  const answers = new Histogram({
    name: 'kubediff_admission_answer_seconds',
    help: "Time from an admission review's request to kubediff's answer (what it adds to a write), by outcome.",
    labelNames: ['outcome'],
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1],
    registers: [registry],
  });
  admission.server.observe({ answered: (outcome, seconds) => answers.observe({ outcome }, seconds) });
}

export function registerPeerMetrics(registry: Registry, peers: ObservedPeers): void {
  totals(
    registry,
    'kubediff_peer_records_total',
    'Records of who made a change that this replica received and posted to the other replicas (--peers), by outcome: sent, failed (the request failed), dropped (at the queue bound).',
    ['outcome'],
    () => {
      const { records } = peers.forwarder.stats();
      return PEER_RECORD_OUTCOMES.map((outcome) => [{ outcome }, records.get(outcome) ?? 0]);
    },
  );
  totals(
    registry,
    'kubediff_peer_requests_total',
    "Requests of the other replicas, by outcome: accepted, unauthorized (not this replica's certificate), bad_request, too_large, busy, not_allowed, timeout, internal_error.",
    ['outcome'],
    () =>
      WEBHOOK_OUTCOMES.map((outcome) => [
        { outcome },
        peers.listeners.reduce((sum, listener) => sum + (listener.stats().peerRequests.get(outcome) ?? 0), 0),
      ]),
  );
  new Gauge({
    name: 'kubediff_peers',
    help: 'Other replicas that --peers resolves to now.',
    registers: [registry],
    collect() {
      this.set(peers.forwarder.stats().peers);
    },
  });
}
