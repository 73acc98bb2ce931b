// Every event as an OpenTelemetry log record (otlp-records.ts) over OTLP/HTTP, protobuf or JSON
// (docs/sinks.md, "OpenTelemetry"), delivered by batch-sink.ts (bounded queue, digests, retries,
// dead letters), not by the OpenTelemetry SDK's pipeline, which drops without a trace. The encoder
// (@opentelemetry/otlp-transformer) loads only when an OTLP sink is created. Answers as the OTLP
// specification says: a partial success is dead-lettered with its count, not retried; 408, 429, 502, 503,
// 504 and network errors are retried (Retry-After honoured); 413 splits the batch; anything else is final.
import type { KubediffEvent } from '../../../events/event.ts';
import { errorMessage, KubediffError } from '../../../util/errors.ts';
import {
  BatchSink,
  type BatchSinkOptions,
  type BatchWork,
  failedTransmission,
  type Transmission,
} from '../../core/batch-sink.ts';
import { createAgent, type HttpTls, post } from '../../core/http.ts';
import { digestRecord, eventRecord, type LogRecordData } from './records.ts';
import type { OtlpProtocol } from './settings.ts';

/** Beside the endpoint's: BatchSinkOptions (timeout 10 s and batches of 5 MiB by default). */
export interface OtlpSinkOptions extends BatchSinkOptions {
  /** The OTLP/HTTP endpoint: a base URL (/v1/logs is added) or the full logs URL (ending in /v1/logs). */
  endpoint: string;
  /** Default http/protobuf. */
  protocol?: OtlpProtocol;
  /** Request headers (authentication: `Authorization`, an API key header…). */
  headers?: Readonly<Record<string, string>>;
  tls?: HttpTls;
  userAgent?: string;
}

const OTLP_DEFAULTS = {
  timeoutMs: 10_000,
  userAgent: 'kubediff',
  // The Collector's OTLP/HTTP receiver takes 20 MiB by default (max_request_body_size); backends less.
  batchMaxBytes: 5 * 1024 * 1024,
};
const RETRYABLE_STATUS = new Set([408, 429, 502, 503, 504]);

type Encoder = Awaited<ReturnType<typeof loadEncoder>>;

/** The logs URL of an endpoint: `/v1/logs` added to a base URL, as OTEL_EXPORTER_OTLP_ENDPOINT is read. */
export function otlpLogsUrl(endpoint: string): URL {
  const url = new URL(endpoint);
  if (!/\/v1\/logs\/?$/.test(url.pathname)) url.pathname = `${url.pathname.replace(/\/+$/, '')}/v1/logs`;
  return url;
}

export class OtlpSink extends BatchSink {
  private readonly url: URL;
  private readonly options: OtlpSinkOptions;
  private readonly protocol: OtlpProtocol;
  private readonly encoder: Encoder;
  private readonly agent;

  /**
   * Loads the OpenTelemetry encoder, then the sink: a failure to load is one error at start-up (a
   * KubediffError), not one per batch.
   */
  static async create(options: OtlpSinkOptions): Promise<OtlpSink> {
    return new OtlpSink(options, await loadEncoder());
  }

  private constructor(options: OtlpSinkOptions, encoder: Encoder) {
    const url = otlpLogsUrl(options.endpoint);
    super(options, {
      timeoutMs: OTLP_DEFAULTS.timeoutMs,
      batchMaxBytes: OTLP_DEFAULTS.batchMaxBytes,
    });
    this.url = url;
    this.options = options;
    this.protocol = options.protocol ?? 'http/protobuf';
    this.agent = createAgent(this.timeoutMs, process.env, options.tls);
    this.encoder = encoder;
  }

  protected release(): Promise<void> {
    return this.agent.destroy();
  }

  protected async transmit(work: BatchWork): Promise<Transmission> {
    const encoder = this.encoder;
    const records =
      work.kind === 'digest'
        ? [digestRecord(work.digest.toPayload())]
        : work.events.map((event: KubediffEvent) => eventRecord(event));
    const json = this.protocol === 'http/json';
    const body = encoder.encode(records, json);
    const outcome = await post(this.agent, this.url, body, {
      headers: {
        'user-agent': this.options.userAgent ?? OTLP_DEFAULTS.userAgent,
        ...this.options.headers,
        'content-type': json ? 'application/json' : 'application/x-protobuf',
      },
      timeoutMs: this.timeoutMs,
      signal: this.clock.deadlineSignal,
      credentials: this.credentials,
    });
    if (!outcome.ok) {
      return failedTransmission(
        outcome,
        !outcome.aborted &&
          (outcome.status === undefined ? outcome.retryable : RETRYABLE_STATUS.has(outcome.status)),
      );
    }
    const partial = encoder.partialSuccess(outcome.bytes, json);
    // The collector's own words, decoded from the bytes (which post() does not scrub).
    return partial && partial.count > 0
      ? { ok: true, rejected: { ...partial, reason: this.credentials.scrub(partial.reason) } }
      : { ok: true };
  }
}

/** The OpenTelemetry packages, or one sentence saying they cannot be loaded (a broken install). */
async function openTelemetryPackages() {
  try {
    return await Promise.all([import('@opentelemetry/otlp-transformer'), import('@opentelemetry/resources')]);
  } catch (error) {
    throw new KubediffError(
      `the OTLP sink cannot load the OpenTelemetry encoder (${errorMessage(error)}); reinstall kubediff.`,
    );
  }
}

/** The OpenTelemetry encoder, loaded when an OTLP sink is created, with kubediff's instrumentation scope. */
async function loadEncoder() {
  const [{ ProtobufLogsSerializer, JsonLogsSerializer }, { resourceFromAttributes }] =
    await openTelemetryPackages();
  type Serializer = typeof ProtobufLogsSerializer;
  type ReadableLogRecord = Parameters<Serializer['serializeRequest']>[0][number];
  const scope = { name: 'kubediff' };
  return {
    encode(records: readonly LogRecordData[], json: boolean): Uint8Array {
      // Records of one resource share its object: the encoder groups them by it.
      const resources = new Map<string, ReturnType<typeof resourceFromAttributes>>();
      const observed = hrTime(Date.now());
      const readable = records.map((record): ReadableLogRecord => {
        const key = `${record.resource['k8s.cluster.name'] ?? ''}\0${record.resource['k8s.namespace.name'] ?? ''}`;
        let resource = resources.get(key);
        if (!resource) {
          resource = resourceFromAttributes(record.resource);
          resources.set(key, resource);
        }
        return {
          hrTime: hrTime(record.timeMs),
          hrTimeObserved: observed,
          severityNumber: record.severityNumber,
          severityText: record.severityText,
          body: record.body as ReadableLogRecord['body'],
          resource,
          instrumentationScope: scope,
          attributes: record.attributes,
          droppedAttributesCount: 0,
        };
      });
      const serializer: Serializer = json ? JsonLogsSerializer : ProtobufLogsSerializer;
      const body = serializer.serializeRequest(readable);
      if (!body) throw new Error('the OTLP encoder produced no request');
      return body;
    },
    /** The rejected records of a 200 answer (its partial_success), if any. */
    partialSuccess(bytes: Buffer, json: boolean): { count: number; reason: string } | undefined {
      if (bytes.length === 0) return undefined;
      try {
        const serializer: Serializer = json ? JsonLogsSerializer : ProtobufLogsSerializer;
        const partial = serializer.deserializeResponse(bytes).partialSuccess;
        const count = Number(partial?.rejectedLogRecords ?? 0);
        return count > 0 ? { count, reason: partial?.errorMessage || 'no reason given' } : undefined;
      } catch (error) {
        // An answer that does not decode is still a 200: the records were taken.
        return { count: 0, reason: errorMessage(error) };
      }
    },
  };
}

/** [seconds, nanoseconds] of epoch milliseconds, as the encoder takes times. */
function hrTime(ms: number): [number, number] {
  const safe = Number.isFinite(ms) ? ms : Date.now();
  const seconds = Math.floor(safe / 1000);
  return [seconds, Math.round((safe - seconds * 1000) * 1e6)];
}
