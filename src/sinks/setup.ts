// From sink settings (flags today, the config file's `sinks:` list later)
// to running sinks behind a router. The specs are plain data with every
// option a sink has, so a config file maps its keys onto them one to one.
import type { Writable } from 'node:stream';
import type { ChangeEvent } from '../events/event.ts';
import { compileFilter, type FilterSpec } from '../events/filter.ts';
import type { StoryOptions } from '../events/story.ts';
import type { EventFailures } from '../util/event-failures.ts';
import type { Logger } from '../util/log.ts';
import { redactUrl } from '../util/url.ts';
import type { BacklogOptions } from './backlog.ts';
import type { ChatPlatformName } from './chat-platforms.ts';
import { DeadLetterFile, type DeadLetterLimits } from './dead-letter.ts';
import type { DeliveryObserver, RetryOptions } from './delivery.ts';
import type { HttpTls } from './http.ts';
import type { KafkaCompression, KafkaSasl, KafkaTls } from './kafka-settings.ts';
import { describeLogSink } from './log-sink-name.ts';
import type { OtlpProtocol } from './otlp-settings.ts';
import { type Route, Router } from './router.ts';
import type { SearchAuth, SearchFlavor } from './search.ts';
import type { SearchIndexMode } from './search-template.ts';
import type { Sink } from './sink.ts';
import { renderJsonLine, StreamOutput } from './stream-output.ts';
import type { WebhookBatchOptions, WebhookQueueOptions } from './webhook.ts';

interface CommonSinkSpec {
  /** For logs and reports; a default is derived (URLs elided). */
  name?: string;
  filter?: FilterSpec;
  /**
   * Stories instead of events (docs/stories.md); a config file's `stories: true/false` until the
   * settings resolve it to the story options (on) or remove it (off).
   */
  stories?: Partial<StoryOptions> | boolean;
}

interface HttpSinkSpec extends CommonSinkSpec {
  /** Per request. */
  timeoutMs?: number;
  retry?: Partial<RetryOptions>;
  /** JSONL file for events that cannot be delivered (default: the watch's --dead-letter). */
  deadLetterFile?: string;
}

interface StdoutSinkSpec extends CommonSinkSpec {
  type: 'stdout';
  format: 'json' | 'pretty';
  /** Pretty output in color. */
  color?: boolean;
}

export interface WebhookSinkSpec extends HttpSinkSpec {
  type: 'webhook';
  url: string;
  headers?: Record<string, string>;
  /** HMAC-SHA256 secret (from the environment, never a flag). */
  secret?: string;
  batch?: WebhookBatchOptions;
  queue?: WebhookQueueOptions;
  maxRequestsPerSecond?: number;
  /** The body: the event's JSON (default), or a CloudEvent (structured unless binary)… */
  format?: 'json' | 'cloudevents';
  cloudEventsMode?: 'structured' | 'binary';
  /** …or what this JSONata expression makes of the event (layout.ts). */
  layout?: string;
}

/** OpenTelemetry logs over OTLP/HTTP (otlp.ts). */
export interface OtlpSinkSpec extends HttpSinkSpec {
  type: 'otlp';
  endpoint: string;
  protocol?: OtlpProtocol;
  headers?: Record<string, string>;
  tls?: HttpTls;
  batchMaxEvents?: number;
  queue?: BacklogOptions;
}

/** OpenSearch or Elasticsearch through _bulk (search.ts). */
export type SearchSinkSpec = SearchSinkSpecOf<'opensearch'> | SearchSinkSpecOf<'elasticsearch'>;

interface SearchSinkSpecOf<T extends SearchFlavor> extends HttpSinkSpec {
  type: T;
  url: string;
  index?: string;
  mode?: SearchIndexMode;
  installTemplate?: boolean;
  auth?: SearchAuth;
  headers?: Record<string, string>;
  tls?: HttpTls;
  batchMaxEvents?: number;
  queue?: BacklogOptions;
}

export interface SlackSinkSpec extends HttpSinkSpec {
  type: 'slack';
  /** An incoming webhook URL… */
  webhookUrl?: string;
  /** …or a bot token (from the environment) and a channel. */
  token?: string;
  channel?: string;
  /** Slack's Web API base URL; default https://slack.com/api. */
  apiUrl?: string;
  minIntervalMs?: number;
}

export interface KafkaSinkSpec extends HttpSinkSpec {
  type: 'kafka';
  /** Bootstrap brokers, host:port each. */
  brokers: string[];
  topic: string;
  clientId?: string;
  compression?: KafkaCompression;
  tls?: KafkaTls;
  /** The password comes from the environment or a file, never a flag. */
  sasl?: KafkaSasl;
  batchMaxEvents?: number;
  queue?: BacklogOptions;
}

/** Teams, Discord, Mattermost or Google Chat: a webhook URL (a credential), on the chat delivery core. */
export interface ChatSinkSpec extends HttpSinkSpec {
  type: ChatPlatformName;
  webhookUrl: string;
  minIntervalMs?: number;
}

export type SinkSpec =
  | StdoutSinkSpec
  | WebhookSinkSpec
  | SlackSinkSpec
  | KafkaSinkSpec
  | ChatSinkSpec
  | OtlpSinkSpec
  | SearchSinkSpec;

/** The sinks whose module createSinks imports on its own: everything but stdout, webhooks, Slack, Kafka and the log sinks. */
const OWN_MODULE_TYPES = ['stdout', 'webhook', 'slack', 'kafka', 'otlp', 'opensearch', 'elasticsearch'];

export interface SinkRuntime {
  log: Logger;
  /** Where stdout sinks write. */
  stdout: Writable;
  /** The stdout stream failed or its reader left. */
  onStdoutClosed?: (error: NodeJS.ErrnoException) => void;
  /** The default dead-letter file of HTTP sinks. */
  deadLetterFile?: string | undefined;
  /** The cap of every dead-letter file. */
  deadLetterLimits?: DeadLetterLimits | undefined;
  userAgent?: string;
  /** Where a sink or a sink filter that throws is reported (src/util/event-failures.ts). */
  failures?: EventFailures;
  /** Told of each HTTP sink's requests and retries (the metrics, with --listen). */
  deliveries?: DeliveryObserver | undefined;
}

export interface SinkSet {
  router: Router;
  /** The stdout sink, whose backpressure the watch honours. */
  stdout: StreamOutput | undefined;
  /** Open dead-letter files; close them after the router. */
  deadLetterFiles: DeadLetterFile[];
  /** Pauses the watch while a stdout reader lags (see StreamOutput.flowControl). */
  flowControl: () => Promise<void> | undefined;
}

/**
 * Creates the sinks and the router. Throws a UsageError when a dead-letter file cannot be opened. The
 * HTTP sinks' modules (undici: about 25 MiB) and the Kafka client are imported only when there is such a sink.
 */
export async function createSinks(specs: readonly SinkSpec[], runtime: SinkRuntime): Promise<SinkSet> {
  const webhook = specs.some((spec) => spec.type === 'webhook') ? await import('./webhook.ts') : undefined;
  const slack = specs.some((spec) => spec.type === 'slack') ? await import('./slack.ts') : undefined;
  const kafka = specs.some((spec) => spec.type === 'kafka') ? await import('./kafka.ts') : undefined;
  const chat = specs.some((spec) => !OWN_MODULE_TYPES.includes(spec.type))
    ? { ...(await import('./chat.ts')), ...(await import('./chat-platforms.ts')) }
    : undefined;
  const files = new Map<string, DeadLetterFile>();
  const deadLetter = (path: string | undefined): DeadLetterFile | undefined => {
    if (path === undefined) return undefined;
    let file = files.get(path);
    if (!file) {
      file = DeadLetterFile.open(path, runtime.log, runtime.deadLetterLimits);
      files.set(path, file);
    }
    return file;
  };
  const names = new Map<string, number>();
  const unique = (name: string): string => {
    const seen = (names.get(name) ?? 0) + 1;
    names.set(name, seen);
    return seen === 1 ? name : `${name} #${seen}`;
  };

  let stdout: StreamOutput | undefined;
  const routes: Route[] = [];
  try {
    for (const spec of specs) {
      let sink: Sink;
      if (spec.type === 'stdout') {
        const stories = storiesOf(spec);
        const pretty = spec.format === 'json' && !stories ? undefined : await prettyRenderers();
        const render: (event: ChangeEvent) => string =
          spec.format === 'json' || !pretty
            ? renderJsonLine
            : pretty.prettyRenderer({ color: spec.color ?? false });
        stdout = new StreamOutput({
          name: unique(spec.name ?? 'stdout'),
          stream: runtime.stdout,
          render,
          log: runtime.log,
          ...(stories && pretty
            ? {
                stories: {
                  options: stories,
                  render: pretty.prettyStoryRenderer({ color: spec.color ?? false }),
                  log: runtime.log,
                },
              }
            : {}),
          ...(runtime.onStdoutClosed ? { onClosed: runtime.onStdoutClosed } : {}),
        });
        sink = stdout;
      } else if (spec.type === 'webhook') {
        const file = deadLetter(spec.deadLetterFile ?? runtime.deadLetterFile);
        const name = spec.name ?? `webhook ${redactUrl(spec.url)}`;
        const { WebhookSink } = webhook as typeof import('./webhook.ts');
        sink = new WebhookSink({
          url: spec.url,
          name: unique(name),
          log: runtime.log,
          format: await webhookFormat(spec),
          ...(spec.headers ? { headers: spec.headers } : {}),
          ...(spec.secret ? { secret: spec.secret } : {}),
          ...(spec.timeoutMs !== undefined ? { timeoutMs: spec.timeoutMs } : {}),
          ...(spec.batch ? { batch: spec.batch } : {}),
          ...(spec.retry ? { retry: spec.retry } : {}),
          ...(spec.queue ? { queue: spec.queue } : {}),
          ...(spec.maxRequestsPerSecond !== undefined
            ? { maxRequestsPerSecond: spec.maxRequestsPerSecond }
            : {}),
          ...(storiesOf(spec) ? { stories: storiesOf(spec) } : {}),
          ...(file ? { deadLetter: file } : {}),
          ...(runtime.deliveries ? { deliveries: runtime.deliveries } : {}),
          ...(runtime.userAgent ? { userAgent: runtime.userAgent } : {}),
        });
      } else if (spec.type === 'kafka') {
        const file = deadLetter(spec.deadLetterFile ?? runtime.deadLetterFile);
        const { KafkaSink } = kafka as typeof import('./kafka.ts');
        sink = new KafkaSink({
          brokers: spec.brokers,
          topic: spec.topic,
          name: unique(spec.name ?? `kafka ${spec.topic}`),
          log: runtime.log,
          ...(spec.clientId ? { clientId: spec.clientId } : {}),
          ...(spec.compression ? { compression: spec.compression } : {}),
          ...(spec.tls ? { tls: spec.tls } : {}),
          ...(spec.sasl ? { sasl: spec.sasl } : {}),
          ...(spec.timeoutMs !== undefined ? { timeoutMs: spec.timeoutMs } : {}),
          ...(spec.batchMaxEvents !== undefined ? { batchMaxEvents: spec.batchMaxEvents } : {}),
          ...(spec.retry ? { retry: spec.retry } : {}),
          ...(spec.queue ? { queue: spec.queue } : {}),
          ...(file ? { deadLetter: file } : {}),
          ...(runtime.deliveries ? { deliveries: runtime.deliveries } : {}),
        });
      } else if (spec.type === 'otlp' || spec.type === 'opensearch' || spec.type === 'elasticsearch') {
        const file = deadLetter(spec.deadLetterFile ?? runtime.deadLetterFile);
        sink = await createLogSink(spec, unique(spec.name ?? describeLogSink(spec)), file, runtime);
      } else if (spec.type !== 'slack') {
        const file = deadLetter(spec.deadLetterFile ?? runtime.deadLetterFile);
        const { ChatSink, CHAT_PLATFORMS } = chat as typeof import('./chat.ts') &
          typeof import('./chat-platforms.ts');
        const platform = CHAT_PLATFORMS[spec.type];
        sink = new ChatSink({
          platform: platform.create(spec.webhookUrl),
          name: unique(spec.name ?? `${spec.type} ${redactUrl(spec.webhookUrl)}`),
          minIntervalMs: spec.minIntervalMs ?? platform.minIntervalMs,
          log: runtime.log,
          ...(spec.timeoutMs !== undefined ? { timeoutMs: spec.timeoutMs } : {}),
          ...(storiesOf(spec) ? { stories: storiesOf(spec) } : {}),
          ...(spec.retry ? { retry: spec.retry } : {}),
          ...(file ? { deadLetter: file } : {}),
          ...(runtime.deliveries ? { deliveries: runtime.deliveries } : {}),
          ...(runtime.userAgent ? { userAgent: runtime.userAgent } : {}),
        });
      } else {
        const file = deadLetter(spec.deadLetterFile ?? runtime.deadLetterFile);
        const target =
          spec.webhookUrl !== undefined
            ? { kind: 'webhook' as const, url: spec.webhookUrl }
            : {
                kind: 'bot' as const,
                token: spec.token ?? '',
                channel: spec.channel ?? '',
                ...(spec.apiUrl ? { apiUrl: spec.apiUrl } : {}),
              };
        const { SlackSink, slackSinkName } = slack as typeof import('./slack.ts');
        const name = spec.name ?? slackSinkName(target);
        sink = new SlackSink({
          target,
          name: unique(name),
          log: runtime.log,
          ...(spec.timeoutMs !== undefined ? { timeoutMs: spec.timeoutMs } : {}),
          ...(spec.minIntervalMs !== undefined ? { minIntervalMs: spec.minIntervalMs } : {}),
          ...(storiesOf(spec) ? { stories: storiesOf(spec) } : {}),
          ...(spec.retry ? { retry: spec.retry } : {}),
          ...(file ? { deadLetter: file } : {}),
          ...(runtime.deliveries ? { deliveries: runtime.deliveries } : {}),
          ...(runtime.userAgent ? { userAgent: runtime.userAgent } : {}),
        });
      }
      routes.push({ sink, ...(spec.filter ? { filter: compileFilter(spec.filter) } : {}) });
    }
  } catch (error) {
    // A later dead-letter file failed to open: release what was created.
    for (const route of routes) void route.sink.close(0);
    for (const file of files.values()) file.close();
    throw error;
  }

  const output = stdout;
  return {
    router: new Router(routes, runtime.log, runtime.failures ? { failures: runtime.failures } : {}),
    stdout: output,
    deadLetterFiles: [...files.values()],
    flowControl: () => output?.flowControl(),
  };
}

/** An OTLP or search sink; their modules (and the OpenTelemetry packages) are imported only here. */
async function createLogSink(
  spec: OtlpSinkSpec | SearchSinkSpec,
  name: string,
  deadLetter: DeadLetterFile | undefined,
  runtime: SinkRuntime,
): Promise<Sink> {
  const common = {
    name,
    log: runtime.log,
    ...(spec.headers ? { headers: spec.headers } : {}),
    ...(spec.tls ? { tls: spec.tls } : {}),
    ...(spec.timeoutMs !== undefined ? { timeoutMs: spec.timeoutMs } : {}),
    ...(spec.batchMaxEvents !== undefined ? { batchMaxEvents: spec.batchMaxEvents } : {}),
    ...(spec.retry ? { retry: spec.retry } : {}),
    ...(spec.queue ? { queue: spec.queue } : {}),
    ...(deadLetter ? { deadLetter } : {}),
    ...(runtime.deliveries ? { deliveries: runtime.deliveries } : {}),
    ...(runtime.userAgent ? { userAgent: runtime.userAgent } : {}),
  };
  if (spec.type === 'otlp') {
    const { OtlpSink } = await import('./otlp.ts');
    return new OtlpSink({
      ...common,
      endpoint: spec.endpoint,
      ...(spec.protocol ? { protocol: spec.protocol } : {}),
    });
  }
  const { SearchSink } = await import('./search.ts');
  return new SearchSink({
    ...common,
    flavor: spec.type,
    url: spec.url,
    ...(spec.index ? { index: spec.index } : {}),
    ...(spec.mode ? { mode: spec.mode } : {}),
    ...(spec.installTemplate !== undefined ? { installTemplate: spec.installTemplate } : {}),
    ...(spec.auth ? { auth: spec.auth } : {}),
  });
}

/** A webhook's body format; a layout is compiled here (the config checks have compiled it once already). */
async function webhookFormat(spec: WebhookSinkSpec): Promise<import('./webhook-body.ts').WebhookFormat> {
  if (spec.layout !== undefined) {
    const { compileLayout } = await import('./layout.ts');
    return { kind: 'layout', layout: compileLayout(spec.layout) };
  }
  if (spec.format === 'cloudevents')
    return { kind: 'cloudevents', mode: spec.cloudEventsMode ?? 'structured' };
  return { kind: 'json' };
}

/** Imported only for pretty output or stories: a JSON-only watch keeps chalk out of its memory. */
async function prettyRenderers() {
  return { ...(await import('./pretty.ts')), ...(await import('./story-format.ts')) };
}

/** The story options of a sink with stories on; undefined when off (docs/stories.md). */
function storiesOf(spec: SinkSpec): Partial<StoryOptions> | undefined {
  return typeof spec.stories === 'object' ? spec.stories : undefined;
}
