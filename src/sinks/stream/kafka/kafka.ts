// Produces every event to a Kafka topic (docs/sinks.md, "Kafka"): the value is the event as `-o json`
// prints it, the key its object's uid (one object, one partition, in order), headers type, cluster,
// resource and namespace; a digest is one record of type DIGEST. Idempotent producer, acks=all, delivered
// by batch-sink.ts: one batch in flight, retried whole before anything later, so order per object holds
// and a retry can only repeat (consumers deduplicate by id). A broker that is down never holds the watch
// or the other sinks. The client library loads only when a Kafka sink is created.
import type { CompressionAlgorithmValue, Producer, SASLMechanismValue } from '@platformatic/kafka';
import { type KubediffEvent, qualifiedResource } from '../../../events/event.ts';
import { errorMessage } from '../../../util/errors.ts';
import {
  BatchSink,
  type BatchSinkOptions,
  type BatchWork,
  type Transmission,
} from '../../core/batch-sink.ts';
import type { KafkaCompression, KafkaSasl, KafkaTls } from './settings.ts';

/** Beside the brokers': BatchSinkOptions (timeout 10 s and batches of 900 KiB by default). */
export interface KafkaSinkOptions extends BatchSinkOptions {
  /** Bootstrap brokers, host:port each. */
  brokers: readonly string[];
  topic: string;
  /** Default 'kubediff'. */
  clientId?: string;
  /** Default 'none'. */
  compression?: KafkaCompression;
  /** TLS to the brokers; absent: plaintext. */
  tls?: KafkaTls;
  sasl?: KafkaSasl;
  /** Time limit of one connection or request. Default 10 s. */
  timeoutMs?: number | undefined;
}

const KAFKA_DEFAULTS = {
  clientId: 'kubediff',
  timeoutMs: 10_000,
  // Below the broker's message.max.bytes (1 MiB by default), which bounds each partition's record batch.
  batchMaxBytes: 900 * 1024,
};

type OutgoingRecord = { topic: string; key: string; value: string; headers: Map<string, string> };

/** The shutdown deadline passed while a produce request was out (or before it went). */
const SHUTDOWN: Transmission = {
  ok: false,
  retryable: false,
  aborted: true,
  reason: 'shutdown',
  key: 'shutdown',
};

export class KafkaSink extends BatchSink {
  private readonly topic: string;
  private readonly producer: Promise<KafkaProducer>;

  constructor(options: KafkaSinkOptions) {
    super(options, {
      timeoutMs: KAFKA_DEFAULTS.timeoutMs,
      batchMaxBytes: KAFKA_DEFAULTS.batchMaxBytes,
    });
    this.topic = options.topic;
    this.producer = createProducer(options, this.timeoutMs);
    // A failure to load the client shows in the first send; this only keeps it from being unhandled.
    this.producer.catch(() => {});
  }

  protected async release(): Promise<void> {
    await (await this.producer).close(true);
  }

  /** One produce request of the batch's records: the broker takes all of them or none. */
  protected async transmit(work: BatchWork): Promise<Transmission> {
    const deadline = this.clock.deadlineSignal;
    if (deadline.aborted) return SHUTDOWN;
    const messages = this.recordsOf(work);
    let onAbort: (() => void) | undefined;
    // The client cannot cancel a send: at the shutdown deadline the sink stops waiting for it, and the
    // batch is reported as not delivered (it may still arrive: at least once).
    const aborted = new Promise<Transmission>((resolve) => {
      onAbort = () => resolve(SHUTDOWN);
      deadline.addEventListener('abort', onAbort, { once: true });
    });
    try {
      const sent = this.producer
        .then((producer) => producer.send({ messages }))
        .then(
          (): Transmission => ({ ok: true }),
          (error: unknown): Transmission => ({
            ok: false,
            retryable: !isFinal(error),
            aborted: false,
            reason: describeKafkaError(error),
            key: kafkaErrorKey(error),
            ...(isTooLarge(error) ? { tooLarge: true } : {}),
          }),
        );
      return await Promise.race([sent, aborted]);
    } finally {
      if (onAbort) deadline.removeEventListener('abort', onAbort);
    }
  }

  private recordsOf(work: BatchWork): OutgoingRecord[] {
    const topic = this.topic;
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
function headersOf(event: KubediffEvent): Map<string, string> {
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

/** Refusals no retry can change: bad credentials, no permission, a record the broker will never take. */
const FINAL_CODES = new Set(['PLT_KFK_AUTHENTICATION', 'PLT_KFK_USER', 'PLT_KFK_UNSUPPORTED_COMPRESSION']);
const FINAL_BROKER_ERRORS =
  /TOPIC_AUTHORIZATION_FAILED|CLUSTER_AUTHORIZATION_FAILED|SASL_AUTHENTICATION_FAILED|MESSAGE_TOO_LARGE|RECORD_LIST_TOO_LARGE|INVALID_RECORD/;
/** The broker's answers to a record batch larger than it takes (message.max.bytes, segment.bytes). */
const TOO_LARGE_BROKER_ERRORS = new Set(['MESSAGE_TOO_LARGE', 'RECORD_LIST_TOO_LARGE']);

/**
 * What makes two failures the same, for saying each once: the broker's error ('TOPIC_AUTHORIZATION_FAILED'),
 * else the client's code ('PLT_KFK_NETWORK'); never the messages, which name brokers and vary.
 */
function kafkaErrorKey(error: unknown): string {
  const all = causes(error);
  for (const e of all) {
    const apiId = (e as { apiId?: unknown }).apiId;
    if (typeof apiId === 'string') return apiId;
  }
  for (const e of all.reverse()) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string') return code;
  }
  return 'kafka error';
}

function isTooLarge(error: unknown): boolean {
  return causes(error).some((e) => TOO_LARGE_BROKER_ERRORS.has(String((e as { apiId?: unknown }).apiId)));
}

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
