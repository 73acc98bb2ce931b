// Produces every event to a Kafka topic, for pipelines: the record's value is
// the event exactly as `-o json` prints it, its key the object's uid (so one
// object's events land in one partition, in order), its headers type,
// cluster, resource and namespace. The producer is idempotent with acks=all,
// and one batch at a time is in flight: a batch that fails is retried as a
// whole (util/backoff.ts, through RetryOptions) before any later event is
// sent, so per object the order is kept, and a retry after a lost answer can
// only repeat records (at least once; consumers deduplicate by the event id).
// Meanwhile events wait in the sink's bounded backlog (webhook rules: full →
// digest, dead-letter file, counted, logged once), so a broker that is down
// never holds up the watch or the other sinks. The client library is loaded
// only when a Kafka sink is created (it costs seconds and tens of MiB).
import type { CompressionAlgorithmValue, Producer, SASLMechanismValue } from '@platformatic/kafka';
import { type ChangeEvent, qualifiedResource } from '../events/event.ts';
import { plural } from '../util/count-text.ts';
import { errorMessage } from '../util/errors.ts';
import type { Logger } from '../util/log.ts';
import { monotonicMs } from '../util/timestamp.ts';
import { type BacklogOptions, SinkBacklog } from './backlog.ts';
import type { DeadLetterFile } from './dead-letter.ts';
import { lossNote } from './dead-letter.ts';
import { type DeliveryObserver, DeliverySink, type RetryOptions } from './delivery.ts';
import type { Digest } from './digest.ts';
import type { EventQueue } from './event-queue.ts';
import type { KafkaCompression, KafkaSasl, KafkaTls } from './kafka-settings.ts';
import type { SinkReport, SinkStats } from './sink.ts';

export interface KafkaSinkOptions {
  /** Bootstrap brokers, host:port each. */
  brokers: readonly string[];
  topic: string;
  /** For logs; default 'kafka <topic>'. */
  name?: string;
  /** Default 'kubediff'. */
  clientId?: string;
  /** Default 'none'. */
  compression?: KafkaCompression;
  /** TLS to the brokers; absent: plaintext. */
  tls?: KafkaTls;
  sasl?: KafkaSasl;
  /** Time limit of one connection or request. Default 10 s. */
  timeoutMs?: number;
  /** Records per produce request. Default 500. */
  batchMaxEvents?: number;
  retry?: Partial<RetryOptions>;
  queue?: BacklogOptions;
  deadLetter?: DeadLetterFile;
  /** Told of each request and retry (metrics). */
  deliveries?: DeliveryObserver;
  log: Logger;
}

const KAFKA_DEFAULTS = { clientId: 'kubediff', timeoutMs: 10_000, batchMaxEvents: 500 };

type OutgoingRecord = { topic: string; key: string; value: string; headers: Map<string, string> };
type Work = { kind: 'events'; events: ChangeEvent[]; json: string[] } | { kind: 'digest'; digest: Digest };

export class KafkaSink extends DeliverySink {
  private readonly options: KafkaSinkOptions;
  private readonly producer: Promise<KafkaProducer>;
  private readonly backlog: SinkBacklog;
  private readonly queue: EventQueue;
  private readonly batchMaxEvents: number;
  private inFlight = 0;
  protected readonly loop: Promise<void>;

  constructor(options: KafkaSinkOptions) {
    super({
      name: options.name ?? `kafka ${options.topic}`,
      timeoutMs: options.timeoutMs ?? KAFKA_DEFAULTS.timeoutMs,
      retry: options.retry,
      log: options.log,
      deadLetter: options.deadLetter,
      deliveries: options.deliveries,
    });
    this.options = options;
    this.batchMaxEvents = Math.max(1, options.batchMaxEvents ?? KAFKA_DEFAULTS.batchMaxEvents);
    this.producer = createProducer(options, this.timeoutMs);
    // A failure to load the client shows in the first send; this only keeps it from being unhandled.
    this.producer.catch(() => {});
    this.backlog = new SinkBacklog(this.name, options.queue, {
      counters: this.counters,
      trouble: this.trouble,
      deadLetter: options.deadLetter,
    });
    this.queue = this.backlog.queue;
    this.loop = this.run();
  }

  deliver(event: ChangeEvent): void {
    this.counters.accepted++;
    if (this.clock.closing) {
      this.backlog.abandon([event], 'arrived after shutdown began');
      return;
    }
    this.backlog.push(event);
    this.wakeup.notify();
  }

  stats(): SinkStats {
    return { ...this.counters, pending: this.queue.pendingEvents + this.inFlight };
  }

  close(timeoutMs: number): Promise<SinkReport> {
    return this.closeWith(timeoutMs, () =>
      this.backlog.abandonAll('not delivered within the shutdown timeout'),
    );
  }

  protected async release(): Promise<void> {
    await (await this.producer).close(true);
  }

  private async run(): Promise<void> {
    for (;;) {
      const work = this.next();
      if (!work) {
        if (this.clock.closing || this.clock.expired) return;
        await this.wakeup.wait();
        continue;
      }
      this.inFlight = work.kind === 'events' ? work.events.length : work.digest.count;
      await this.contained(
        () => this.send(work),
        (reason) => this.abandon(work, reason),
      );
      this.inFlight = 0;
      this.backlog.settled();
      if (this.clock.expired) return;
    }
  }

  private next(): Work | undefined {
    const head = this.queue.peek();
    if (!head || this.clock.expired) return undefined;
    if (head.kind === 'digest') {
      this.queue.shift();
      return { kind: 'digest', digest: head.digest };
    }
    const entries = this.queue.takeEvents(this.batchMaxEvents);
    return { kind: 'events', events: entries.map((e) => e.event), json: entries.map((e) => e.json) };
  }

  private async send(work: Work): Promise<void> {
    const messages = this.recordsOf(work);
    for (let attempt = 1; ; attempt++) {
      const startedAt = monotonicMs();
      const failure = await this.produce(messages);
      this.trouble.requestDone(startedAt, failure === undefined);
      if (failure === undefined) {
        this.delay.reset();
        this.trouble.recovered();
        if (work.kind === 'events') this.counters.delivered += work.events.length;
        else {
          this.counters.summarized += work.digest.count;
          this.counters.digests++;
        }
        return;
      }
      const loss = lossNote(describeWork(work), this.options.deadLetter);
      const final = this.finalFailure(failure, failure.reason, loss);
      if (final) {
        this.abandon(work, final.reason);
        return;
      }
      if (attempt >= this.retry.maxAttempts) {
        this.abandon(work, this.gaveUp(failure.reason, failure.reason, attempt, loss));
        return;
      }
      const wait = this.delay.next();
      this.trouble.retrying(failure.reason, wait, attempt);
      if (!(await this.clock.waitUntil(Date.now() + wait, this.wakeup))) {
        this.abandon(work, `${failure.reason}; the next retry was due after the shutdown timeout`);
        return;
      }
    }
  }

  /** undefined when the broker took every record; else why not, and whether trying again may help. */
  private async produce(
    messages: OutgoingRecord[],
  ): Promise<{ reason: string; retryable: boolean; aborted: boolean } | undefined> {
    const deadline = this.clock.deadlineSignal;
    if (deadline.aborted) return { reason: 'shutdown', retryable: false, aborted: true };
    let onAbort: (() => void) | undefined;
    // The client cannot cancel a send: at the shutdown deadline the sink stops waiting for it, and the
    // batch is reported as not delivered (it may still arrive: at least once).
    const aborted = new Promise<'aborted'>((resolve) => {
      onAbort = () => resolve('aborted');
      deadline.addEventListener('abort', onAbort, { once: true });
    });
    try {
      const sent = this.producer
        .then((producer) => producer.send({ messages }))
        .then(
          () => undefined,
          (error: unknown) => ({
            reason: describeKafkaError(error),
            retryable: !isFinal(error),
            aborted: false,
          }),
        );
      const outcome = await Promise.race([sent, aborted]);
      return outcome === 'aborted' ? { reason: 'shutdown', retryable: false, aborted: true } : outcome;
    } finally {
      if (onAbort) deadline.removeEventListener('abort', onAbort);
    }
  }

  private recordsOf(work: Work): OutgoingRecord[] {
    const topic = this.options.topic;
    if (work.kind === 'digest') {
      const payload = work.digest.toPayload();
      const headers = new Map([['type', 'DIGEST']]);
      if (payload.cluster) headers.set('cluster', payload.cluster);
      return [{ topic, key: payload.id, value: JSON.stringify(payload), headers }];
    }
    return work.events.map((event, index) => ({
      topic,
      key: event.object.uid,
      value: work.json[index] as string,
      headers: headersOf(event),
    }));
  }

  private abandon(work: Work, reason: string): void {
    if (work.kind === 'events') this.backlog.abandon(work.events, reason);
    else this.backlog.abandonDigest(work.digest, reason);
  }
}

type KafkaProducer = Producer<string, string, string, string>;

async function createProducer(options: KafkaSinkOptions, timeoutMs: number): Promise<KafkaProducer> {
  const { Producer, ProduceAcks, stringSerializers } = await import('@platformatic/kafka');
  return new Producer({
    clientId: options.clientId ?? KAFKA_DEFAULTS.clientId,
    bootstrapBrokers: [...options.brokers],
    serializers: stringSerializers,
    idempotent: true,
    acks: ProduceAcks.ALL,
    compression: (options.compression ?? 'none') as CompressionAlgorithmValue,
    connectTimeout: timeoutMs,
    requestTimeout: timeoutMs,
    timeout: timeoutMs,
    // The client's own retries are quick and keep the idempotent sequence numbers (the broker drops a
    // repeat); longer outages are this sink's retries, with its backoff.
    retries: 2,
    retryDelay: 250,
    autocreateTopics: false,
    ...(options.tls ? { tls: tlsOptions(options.tls) } : {}),
    ...(options.sasl
      ? {
          sasl: {
            mechanism: options.sasl.mechanism as SASLMechanismValue,
            username: options.sasl.username,
            password: options.sasl.password,
          },
        }
      : {}),
  });
}

/** type, cluster, resource ('deployments.apps') and namespace: what consumers route and filter on. */
function headersOf(event: ChangeEvent): Map<string, string> {
  const headers = new Map<string, string>([['type', event.type]]);
  if (event.cluster) headers.set('cluster', event.cluster);
  headers.set('resource', qualifiedResource(event));
  if (event.object.namespace) headers.set('namespace', event.object.namespace);
  return headers;
}

function tlsOptions(tls: KafkaTls): Record<string, string | boolean> {
  return {
    ...(tls.ca ? { ca: tls.ca } : {}),
    ...(tls.cert ? { cert: tls.cert } : {}),
    ...(tls.key ? { key: tls.key } : {}),
    ...(tls.serverName ? { servername: tls.serverName } : {}),
    rejectUnauthorized: true,
  };
}

function describeWork(work: Work): string {
  if (work.kind === 'digest') return `A digest of ${plural(work.digest.count, 'event')}`;
  return work.events.length === 1
    ? `Event ${work.events[0]?.id}`
    : `${plural(work.events.length, 'event')} (a batch)`;
}

/** Refusals no retry can change: bad credentials, no permission, a record the broker will never take. */
const FINAL_CODES = new Set(['PLT_KFK_AUTHENTICATION', 'PLT_KFK_USER', 'PLT_KFK_UNSUPPORTED_COMPRESSION']);
const FINAL_BROKER_ERRORS =
  /TOPIC_AUTHORIZATION_FAILED|CLUSTER_AUTHORIZATION_FAILED|SASL_AUTHENTICATION_FAILED|MESSAGE_TOO_LARGE|RECORD_LIST_TOO_LARGE|INVALID_RECORD/;

function isFinal(error: unknown): boolean {
  for (const e of causes(error)) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && FINAL_CODES.has(code)) return true;
    if (FINAL_BROKER_ERRORS.test(String((e as { apiId?: unknown }).apiId ?? ''))) return true;
  }
  return FINAL_BROKER_ERRORS.test(describeKafkaError(error));
}

/** The error and everything under it (causes, the errors of an AggregateError), breadth first, bounded. */
function causes(error: unknown): unknown[] {
  const all: unknown[] = [];
  const queue: unknown[] = [error];
  while (queue.length > 0 && all.length < 20) {
    const next = queue.shift();
    if (!next || typeof next !== 'object') continue;
    all.push(next);
    const { cause, errors } = next as { cause?: unknown; errors?: unknown };
    if (cause) queue.push(cause);
    if (Array.isArray(errors)) queue.push(...errors);
  }
  return all;
}

/** One phrase: the deepest messages say what happened ('connect ECONNREFUSED 127.0.0.1:9092'). */
export function describeKafkaError(error: unknown): string {
  const messages: string[] = [];
  for (const e of causes(error)) {
    const message = e instanceof Error ? e.message : '';
    if (message && !messages.includes(message)) messages.push(message);
  }
  const text = messages.length > 0 ? messages.slice(-2).join(': ') : errorMessage(error);
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length > 300 ? `${line.slice(0, 300)}…` : line;
}
