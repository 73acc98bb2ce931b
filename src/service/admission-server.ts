// `--admission-listen`: the HTTPS endpoint of a validating admission webhook that never rejects
// (docs/who.md). Every AdmissionReview is answered `allowed: true` as soon as its body is read, with no
// patch and no warning; only then is the review turned into a record for the join: what names the write
// (admission-review.ts) and what it can be checked by (the digest of the object it produces, normalized as
// the watch stores that type; a DELETE's, of its old object; a scale's replicas: `digest`,
// src/events/admission-digests.ts). The objects are dropped with the body. Reviews kubediff has no use for
// are counted and dropped: dry runs, CONNECT, subresource creates without the object's uid, resources
// kubediff does not watch, and objects that cannot be digested (nested too deep: such a review cannot be
// checked, and one that cannot be checked is what a forger would post).
//
// Authentication, TLS reloading and the bounds are the audit webhook's (webhook-listener.ts): a body
// larger than `maxRequestBytes` is refused (413) and at most ADMISSION_CONCURRENT_REQUESTS are read at once
// (503 beyond it); the API server's failurePolicy Ignore lets the write through either way, without user.

import type { WriteChecks } from '../events/admission-digests.ts';
import type { AdmissionRecord } from '../events/admission-match.ts';
import type { FailureReporter } from '../util/event-failures.ts';
import type { Logger } from '../util/log.ts';
import { ADMISSION_CONCURRENT_REQUESTS } from '../util/memory-budget.ts';
import {
  AdmissionBodyError,
  allowedAnswer,
  IGNORE_REASONS,
  type IgnoreReason,
  type ReviewedWrite,
  readAdmissionReview,
} from './admission-review.ts';
import { endpointOf, type WebhookEndpoint } from './webhook-endpoint.ts';
import { type CertificateSource, WebhookListener, type WebhookRoute } from './webhook-listener.ts';
import type { WebhookOutcome } from './webhook-outcomes.ts';

export interface AdmissionServerOptions extends WebhookEndpoint {
  reloadIntervalMs?: number;
  /** The serving certificate, when kubediff manages it (managed-certificate.ts), instead of files. */
  certificate?: CertificateSource | undefined;
  /**
   * What the review can be checked by (admission-digests.ts); `{}` when nothing (a `status` write, another
   * version); undefined when kubediff does not watch the resource. May throw (an object nested too deep).
   */
  digest(write: ReviewedWrite): WriteChecks | undefined;
  /** Where the records go (the join, and the peers). */
  onRecords: (records: AdmissionRecord[]) => void;
  /** What the other replicas post (--peers), when they are configured. */
  peerRoute?: WebhookRoute | undefined;
  /** Where a failure to take a request's records is reported (kubediff_event_failures_total). */
  failures?: FailureReporter<'handler'> | undefined;
  log: Logger;
  now?: () => number;
}

/**
 * A review's body arrives at once: the API server waits at most the webhook's timeoutSeconds (2 in
 * deploy/, 30 at most), so a body still coming after 5 s is a client holding one of the reads (408).
 * Documented in docs/who.md ("Limits").
 */
export const BODY_TIMEOUT_MS = 5_000;

/**
 * With all 8 reads busy, a read whose body has been arriving for this long gives its place to the new
 * review (408): clients sending bodies slowly cannot keep reviews out between deadlines. docs/who.md.
 */
export const SLOW_BODY_MS = 1_000;

/** What the metrics see of the answers (kubediff_admission_answer_seconds). */
export interface AdmissionObserver {
  answered(outcome: WebhookOutcome, seconds: number): void;
}

export class AdmissionServer {
  readonly listener: WebhookListener;
  private readonly ignored = new Map<IgnoreReason, number>();
  private readonly observers: AdmissionObserver[] = [];

  private constructor(listener: WebhookListener) {
    this.listener = listener;
  }

  /** Listens; rejects with a UsageError when the files cannot be read or the port cannot be had. */
  static async start(options: AdmissionServerOptions): Promise<AdmissionServer> {
    let instance: AdmissionServer | undefined;
    const now = options.now ?? Date.now;
    const listener = await WebhookListener.start({
      name: 'admission webhook',
      settingsKey: 'admission',
      listener: 'admission',
      flag: '--admission-listen',
      requestsMetric: 'kubediff_admission_reviews_total',
      ...endpointOf(options),
      certificate: options.certificate,
      maxConcurrentRequests: ADMISSION_CONCURRENT_REQUESTS,
      bodyTimeoutMs: BODY_TIMEOUT_MS,
      slowBodyMs: SLOW_BODY_MS,
      ...(options.reloadIntervalMs !== undefined ? { reloadIntervalMs: options.reloadIntervalMs } : {}),
      route: {
        receive: (body) => {
          let reading: ReturnType<typeof readAdmissionReview>;
          try {
            reading = readAdmissionReview(body.toString('utf8'));
          } catch (error) {
            const why = error instanceof AdmissionBodyError ? error.message : 'the body cannot be read';
            return { status: 400, body: '', why };
          }
          return {
            status: 200,
            body: allowedAnswer(reading.requestUID, reading.apiVersion),
            // After the answer is written: the API server's write does not wait for the digest.
            after: () => instance?.keep(reading, options, now()),
          };
        },
      },
      peerRoute: options.peerRoute,
      failures: options.failures,
      onAnswered: (outcome, seconds, peer) => {
        if (!peer) for (const observer of instance?.observers ?? []) observer.answered(outcome, seconds);
      },
      log: options.log,
    });
    instance = new AdmissionServer(listener);
    options.log.info(
      `receiving admission reviews on https://${listener.address} (${
        listener.authentication
          ? `authenticated by ${listener.authentication}`
          : 'unauthenticated: admission.allowUnauthenticated'
      })`,
    );
    return instance;
  }

  /** host:port actually bound. */
  get address(): string {
    return this.listener.address;
  }

  observe(observer: AdmissionObserver): void {
    this.observers.push(observer);
  }

  /** Requests by outcome and reviews ignored by reason (for /metrics; the records, the source counts). */
  stats(): {
    requests: ReadonlyMap<WebhookOutcome, number>;
    ignored: ReadonlyMap<IgnoreReason, number>;
  } {
    return { requests: this.listener.stats().requests, ignored: this.ignored };
  }

  close(): Promise<void> {
    return this.listener.close();
  }

  private keep(
    reading: ReturnType<typeof readAdmissionReview>,
    options: AdmissionServerOptions,
    now: number,
  ): void {
    if ('ignored' in reading) {
      this.ignore(reading.ignored);
      return;
    }
    const { write } = reading;
    let checks: WriteChecks | undefined;
    try {
      checks = options.digest(write);
    } catch (error) {
      // Dropped, not kept unchecked: a review that cannot be checked is what a forger wants.
      if (this.ignore('digest_failed') === 1) {
        options.log.warn(
          'admission webhook: dropped a review whose object cannot be digested ' +
            `(${error instanceof RangeError ? 'nested too deep' : 'not an object kubediff can read'}): it names nobody. ` +
            'Counted in kubediff_admission_reviews_ignored_total{reason="digest_failed"}; logged once.',
        );
      }
      return;
    }
    if (checks === undefined) {
      this.ignore('not_watched');
      return;
    }
    options.onRecords([admissionRecordOf(reading.requestUID, write, checks, now)]);
  }

  /** Counts a review ignored; returns how many were for that reason. */
  private ignore(reason: IgnoreReason): number {
    const count = (this.ignored.get(reason) ?? 0) + 1;
    this.ignored.set(reason, count);
    return count;
  }
}

export { IGNORE_REASONS };

/** What the join keeps of a review: names, uids, versions, the user, what it is checked by; never an object. */
export function admissionRecordOf(
  reviewUID: string,
  write: ReviewedWrite,
  checks: WriteChecks,
  time: number,
): AdmissionRecord {
  return {
    reviewUID,
    operation: write.operation,
    group: write.group,
    resource: write.resource,
    ...(write.subresource ? { subresource: write.subresource } : {}),
    ...(write.namespace ? { namespace: write.namespace } : {}),
    ...(write.name ? { name: write.name } : {}),
    uid: write.uid,
    ...(write.oldResourceVersion ? { oldResourceVersion: write.oldResourceVersion } : {}),
    ...(checks.digest ? { digest: checks.digest } : {}),
    ...(checks.oldDigest ? { oldDigest: checks.oldDigest } : {}),
    ...(checks.replicas !== undefined ? { replicas: checks.replicas } : {}),
    user: write.user,
    time,
  };
}
