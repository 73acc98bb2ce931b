// `--admission-listen`: a validating admission webhook that never rejects (docs/who.md). Every review is
// answered `allowed: true` once its body is read; only then is it made a record for the join (what names
// the write, admission-review.ts; what checks it, admission-digests.ts) and its objects dropped. Reviews
// of no use are counted and dropped: dry runs, CONNECT, subresource creates without a uid, resources not
// watched, objects that cannot be digested. A review over SMALL_REVIEW_BYTES is answered from its head
// (review-head.ts) and parsed and digested in the admission thread (admission-thread.ts), in room taken
// there before its body is read: one that finds no room is answered from its head and dropped, and only
// its first SMALL_REVIEW_BYTES are ever held (a large body on this thread's heap costs it garbage
// collections of the whole heap, which stall every answer, /healthz and the watch). Authentication,
// TLS reloading and bounds are webhook-listener.ts's (413; 503 without Retry-After when no read is free).

import { errorMessage } from '../../util/errors.ts';
import type { FailureReporter } from '../../util/event-failures.ts';
import type { Logger } from '../../util/log.ts';
import { ADMISSION_CONCURRENT_REQUESTS } from '../../util/memory-budget.ts';
import { formatSize } from '../../util/size.ts';
import { endpointOf, type WebhookEndpoint } from '../listener/webhook-endpoint.ts';
import { type CertificateSource, WebhookListener } from '../listener/webhook-listener.ts';
import type { WebhookOutcome } from '../listener/webhook-outcomes.ts';
import type { BodyPlan, WebhookAnswer, WebhookRoute } from '../listener/webhook-route.ts';
import type { WriteChecks } from './admission-digests.ts';
import type { AdmissionRecord } from './admission-match.ts';
import {
  AdmissionBodyError,
  allowedAnswer,
  IGNORE_REASONS,
  type IgnoreReason,
  type ReviewedWrite,
  readAdmissionReview,
} from './admission-review.ts';
import { type Reservation, type ReviewThread, type ThreadAnswer, ThreadClosed } from './admission-thread.ts';
import { type DigestedReview, digestReview, type NamedWrite } from './review-digest.ts';
import { type ReviewHead, reviewHeadOf } from './review-head.ts';

export interface AdmissionServerOptions extends WebhookEndpoint {
  reloadIntervalMs?: number;
  /** The serving certificate, when kubediff manages it (managed-certificate.ts), instead of files. */
  certificate?: CertificateSource | undefined;
  /**
   * What the review can be checked by (admission-digests.ts); `{}` when nothing (a `status` write, another
   * version); undefined when kubediff does not watch the resource. May throw (an object nested too deep).
   */
  digest(write: ReviewedWrite): WriteChecks | undefined;
  /** Where reviews larger than SMALL_REVIEW_BYTES are parsed and digested (an AdmissionThread). */
  thread: ReviewThread;
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
 * A review's body arrives at once: the API server waits at most the webhook's timeoutSeconds (1 in
 * deploy/, 30 at most), so a body still coming after 5 s is a client holding one of the reads (408).
 * Documented in docs/who.md ("Limits").
 */
export const BODY_TIMEOUT_MS = 5_000;

/**
 * With all 8 reads busy, a read whose body has been arriving for this long gives its place to the new
 * review (408): clients sending bodies slowly cannot keep reviews out between deadlines. docs/who.md.
 */
export const SLOW_BODY_MS = 1_000;

/**
 * A review up to this size is parsed and digested on the thread that answers (well under a millisecond);
 * a larger one in the admission thread, answered from its head found within these first bytes.
 * Documented in docs/who.md ("Limits").
 */
export const SMALL_REVIEW_BYTES = 64 * 1024;

/** What the metrics see of the answers (kubediff_admission_answer_seconds). */
export interface AdmissionObserver {
  answered(outcome: WebhookOutcome, seconds: number): void;
}

export class AdmissionServer {
  readonly listener: WebhookListener;
  private readonly options: AdmissionServerOptions;
  private readonly now: () => number;
  private readonly ignored = new Map<IgnoreReason, number>();
  /** Bounds of the admission thread already logged (once each). */
  private readonly logged = new Set<IgnoreReason>();
  private readonly observers: AdmissionObserver[] = [];

  private constructor(listener: WebhookListener, options: AdmissionServerOptions) {
    this.listener = listener;
    this.options = options;
    this.now = options.now ?? Date.now;
  }

  /** Listens; rejects with a UsageError when the files cannot be read or the port cannot be had. */
  static async start(options: AdmissionServerOptions): Promise<AdmissionServer> {
    let instance: AdmissionServer | undefined;
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
          const server = instance as AdmissionServer;
          return body.length <= SMALL_REVIEW_BYTES ? server.small(body) : server.large(body);
        },
        plan: (declaredBytes) => (instance as AdmissionServer).plan(declaredBytes),
      },
      peerRoute: options.peerRoute,
      failures: options.failures,
      onAnswered: (outcome, seconds, peer) => {
        if (!peer) for (const observer of instance?.observers ?? []) observer.answered(outcome, seconds);
      },
      log: options.log,
    });
    instance = new AdmissionServer(listener, options);
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

  /**
   * What is kept of a body, from its length (declared, or the most it may be): a small one whole; a large
   * one whole when the admission thread has room for it (taken now), else only its first
   * SMALL_REVIEW_BYTES, where its head is: answered from it and dropped, its rest never held.
   */
  private plan(bytes: number): BodyPlan {
    if (bytes <= SMALL_REVIEW_BYTES) return { keepBytes: bytes, receive: (body) => this.small(body) };
    const room = this.options.thread.reserve(bytes);
    if (!room) {
      return {
        keepBytes: SMALL_REVIEW_BYTES,
        receive: (first, size) => (size <= SMALL_REVIEW_BYTES ? this.small(first) : this.headOnly(first)),
      };
    }
    return {
      keepBytes: bytes,
      receive: (body) => {
        try {
          if (body.length > SMALL_REVIEW_BYTES) return this.large(body, room);
          room.release();
          return this.small(body);
        } catch (error) {
          room.release();
          throw error;
        }
      },
      abandon: () => room.release(),
    };
  }

  /** A small review: read here, answered, then digested here. */
  private small(body: Buffer): WebhookAnswer {
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
      after: () =>
        this.keep(
          digestReview(reading, (write) => this.options.digest(write)),
          this.now(),
        ),
    };
  }

  /**
   * A large review: answered from its head at once, then read and digested in the admission thread (in
   * `room`, reserved before it was read, when it was); without a head, answered once the thread has read it.
   */
  private large(body: Buffer, room?: Reservation): WebhookAnswer | Promise<WebhookAnswer> {
    const time = this.now();
    const head = reviewHeadOf(body, SMALL_REVIEW_BYTES);
    if (head) {
      return {
        status: 200,
        body: allowedAnswer(head.requestUID, head.apiVersion),
        after: () => this.digestLater(body, head, time, room),
      };
    }
    const digesting = room ? room.digest(body) : this.options.thread.digest(body);
    if (!digesting) return this.threadFull();
    return digesting.then(
      (answer): WebhookAnswer => {
        if ('error' in answer) return { status: 400, body: '', why: answer.error };
        const { review } = answer;
        return {
          status: 200,
          body: allowedAnswer(review.requestUID, review.apiVersion),
          after: () => this.keep(review, time),
        };
      },
      (error: unknown) => busy(errorMessage(error)),
    );
  }

  /**
   * The first bytes of a large review the admission thread had no room for: answered from its head and
   * dropped; without a head, 503 (the write goes through without user, as it does for the dropped one).
   */
  private headOnly(first: Buffer): WebhookAnswer {
    const head = reviewHeadOf(first, SMALL_REVIEW_BYTES);
    if (!head) return this.threadFull();
    return {
      status: 200,
      body: allowedAnswer(head.requestUID, head.apiVersion),
      after: () => this.threadBusy(),
    };
  }

  private threadFull(): WebhookAnswer {
    return busy('the thread that reads large reviews is full');
  }

  private threadBusy(): void {
    this.ignoreOnce(
      'thread_busy',
      `${formatSize(this.options.thread.maxBytes)} of large reviews are being read for or waiting for the thread that reads them, the most it holds; a large review is answered and dropped, its write named by no user`,
    );
  }

  /** A large review answered from its head: its record, once the admission thread has read it. */
  private digestLater(body: Buffer, head: ReviewHead, time: number, room?: Reservation): void {
    const digesting = room ? room.digest(body) : this.options.thread.digest(body);
    if (!digesting) {
      this.threadBusy();
      return;
    }
    const taken = (answer: ThreadAnswer) => {
      // The answer named the head's uid: a body that says otherwise once parsed names nothing.
      if ('error' in answer || answer.review.requestUID !== head.requestUID) this.ignore('unreadable');
      else this.keep(answer.review, time);
    };
    digesting.then(
      (answer) => this.listener.takeRecords(() => taken(answer)),
      (error: unknown) => this.threadFailed(error),
    );
  }

  private threadFailed(error: unknown): void {
    if (error instanceof ThreadClosed) return;
    this.ignoreOnce(
      'thread_failed',
      `${errorMessage(error)}; the reviews it held are dropped, its writes named by no user, and it is started again for the next one`,
    );
  }

  private ignoreOnce(reason: IgnoreReason, line: string): void {
    this.ignore(reason);
    if (this.logged.has(reason)) return;
    this.logged.add(reason);
    this.options.log.warn(
      `admission webhook: ${line}. Counted in kubediff_admission_reviews_ignored_total{reason="${reason}"}; logged once.`,
    );
  }

  private keep(review: DigestedReview, now: number): void {
    if ('ignored' in review) {
      const count = this.ignore(review.ignored);
      // Dropped, not kept unchecked: a review that cannot be checked is what a forger wants.
      if (review.ignored === 'digest_failed' && count === 1) {
        this.options.log.warn(
          `admission webhook: dropped a review whose object cannot be digested (${review.digestFailure ?? 'not an object kubediff can read'}): it names nobody. ` +
            'Counted in kubediff_admission_reviews_ignored_total{reason="digest_failed"}; logged once.',
        );
      }
      return;
    }
    this.options.onRecords([admissionRecordOf(review.requestUID, review.write, review.checks, now)]);
  }

  /** Counts a review ignored; returns how many were for that reason. */
  private ignore(reason: IgnoreReason): number {
    const count = (this.ignored.get(reason) ?? 0) + 1;
    this.ignored.set(reason, count);
    return count;
  }
}

export { IGNORE_REASONS };

const busy = (why: string): WebhookAnswer => ({ status: 503, body: '', outcome: 'busy', why });

/** What the join keeps of a review: names, uids, versions, the user, what it is checked by; never an object. */
export function admissionRecordOf(
  reviewUID: string,
  write: NamedWrite,
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
