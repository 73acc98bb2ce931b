// What a webhook sink is configured by (docs/sinks.md, "Webhooks"): its `sinks:` entry (schema, its
// URL's format, the checks of what spans keys: batch keys only with batch, one body format at a time and a
// layout that compiles), its flags (--webhook, repeatable, with --webhook-header, -batch and
// -timeout) with the HMAC secret and secret headers from the environment (never a flag), its spec, and its
// credentials. Loads neither undici nor a layout thread: the factory imports webhook.ts when a sink is made.
import type { FromSchema } from 'json-schema-to-ts';
import { isJsonObject } from '../../../kube/types.ts';
import { parseCount } from '../../../util/count.ts';
import { groupedCount } from '../../../util/count-text.ts';
import { type Credential, headerCredentials, secretCredentials } from '../../../util/credentials.ts';
import { parseDurationSetting } from '../../../util/duration.ts';
import type { Env } from '../../../util/environment.ts';
import { UsageError } from '../../../util/errors.ts';
import type { FlagSpec } from '../../../util/flag-spec.ts';
import type { Check, Checks } from '../../../util/key-checks.ts';
import { parseSize } from '../../../util/size.ts';
import type { CommonEntrySpec, HttpSinkSpec } from '../../component.ts';
import { httpUrlFormat } from '../../core/entry-formats.ts';
import { commonKeys, deliveryKeys, durationOrZero, headerMap, size } from '../../core/entry-schema.ts';
import { checkedMs, sinkEnvValue } from '../../core/entry-settings.ts';
import { checkHttpUrl, parseHeaders } from '../../core/receiver-settings.ts';
import { CLOUDEVENTS_MODES, type CloudEventsMode } from './cloudevents.ts';
import { layoutProblem } from './layout.ts';
import type { WebhookBatchOptions, WebhookQueueOptions } from './webhook.ts';

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
  cloudEventsMode?: CloudEventsMode;
  /** …or what this JSONata expression makes of the event (layout.ts). */
  layout?: string;
}

export const webhookSchema = {
  type: 'object',
  properties: {
    type: { const: 'webhook' },
    ...commonKeys,
    ...deliveryKeys,
    url: { type: 'string', format: 'webhook-url' },
    headers: headerMap,
    secret: { type: 'string' },
    batch: { type: 'integer', minimum: 1, maximum: 10000 },
    // Bytes of the events' JSON per request, a size (900KB).
    batchBytes: size,
    // 0: send what has arrived at once.
    batchWait: durationOrZero,
    maxRequestsPerSecond: { type: 'number', exclusiveMinimum: 0 },
    // The body: the event's JSON (json), a CloudEvent, or what a JSONata `layout` makes of the event.
    format: { type: 'string', enum: ['json', 'cloudevents'] },
    cloudEventsMode: { type: 'string', enum: CLOUDEVENTS_MODES },
    layout: { type: 'string', minLength: 1 },
  },
  required: ['type', 'url'],
  additionalProperties: false,
} as const;

export type WebhookEntry = FromSchema<typeof webhookSchema>;

/** The environment variables of the webhook flags' secrets (documented in docs/sinks.md). */
export const WEBHOOK_ENV = {
  secret: 'KUBEDIFF_WEBHOOK_SECRET',
  headers: 'KUBEDIFF_WEBHOOK_HEADERS',
} as const;

export const webhookFlags: readonly FlagSpec[] = [
  { flags: '--webhook <url>', description: 'POST every event to this URL (repeatable)', repeatable: true },
  {
    flags: '--webhook-header <header>',
    description: `a "Name: value" header on webhook requests (repeatable; secret ones: $${WEBHOOK_ENV.headers})`,
    repeatable: true,
    more: true,
  },
  {
    flags: '--webhook-batch <n>',
    description: 'send webhooks JSON arrays of up to n events (default: one event per request)',
    more: true,
  },
  {
    flags: '--webhook-timeout <duration>',
    description: 'time limit of one webhook request (default: 10s)',
    more: true,
  },
];

/** The values of webhookFlags as commander hands them over. */
interface WebhookFlagValues {
  webhook?: string[];
  webhookHeader?: string[];
  webhookBatch?: string;
  webhookTimeout?: string;
}

const MAX_BATCH = 10_000;

/** --webhook (repeatable), all of them with the same headers, secret, batch and timeout. */
export function webhookSpecsFromFlags(values: object, env: Env): WebhookSinkSpec[] {
  const flags = values as WebhookFlagValues;
  const webhooks = (flags.webhook ?? []).map((value) => value.trim()).filter(Boolean);
  if (webhooks.length === 0) {
    for (const [flag, value] of [
      ['--webhook-header', flags.webhookHeader?.length ? 'set' : undefined],
      ['--webhook-batch', flags.webhookBatch],
      ['--webhook-timeout', flags.webhookTimeout],
    ] as const) {
      if (value !== undefined)
        throw new UsageError(`${flag} applies to --webhook, and no --webhook is given.`);
    }
  }
  const headers = {
    ...parseHeaders(sinkEnvValue(env, WEBHOOK_ENV.headers)?.split(/\r?\n/) ?? [], WEBHOOK_ENV.headers),
    ...parseHeaders(flags.webhookHeader ?? [], '--webhook-header'),
  };
  const secret = sinkEnvValue(env, WEBHOOK_ENV.secret);
  const batch =
    flags.webhookBatch === undefined
      ? undefined
      : parseCount(
          '--webhook-batch',
          flags.webhookBatch,
          `use a number of events per request from 1 to ${groupedCount(MAX_BATCH)}`,
          MAX_BATCH,
        );
  const timeoutMs =
    flags.webhookTimeout === undefined
      ? undefined
      : parseDurationSetting('--webhook-timeout', flags.webhookTimeout);
  return webhooks.map((url) => {
    checkHttpUrl(url, 'invalid --webhook', `give an Authorization header in ${WEBHOOK_ENV.headers}`);
    const spec: WebhookSinkSpec = { type: 'webhook', url };
    if (Object.keys(headers).length > 0) spec.headers = headers;
    if (secret) spec.secret = secret;
    if (batch !== undefined) spec.batch = { maxEvents: batch };
    if (timeoutMs !== undefined) spec.timeoutMs = timeoutMs;
    return spec;
  });
}

const batchKeysNeedBatch: Check = (sink, path, { at }) => {
  if (!isJsonObject(sink) || sink.batch !== undefined) return;
  for (const key of ['batchWait', 'batchBytes'])
    if (sink[key] !== undefined)
      at([...path, key], 'applies to batches: set batch: too (events per request)');
};

/** format, cloudEventsMode and layout: one body at a time, and a layout that compiles. */
const oneBodyFormat: Check = (sink, path, { at }) => {
  if (!isJsonObject(sink)) return;
  if (sink.layout !== undefined && sink.format === 'cloudevents')
    at([...path, 'layout'], 'a webhook sends either CloudEvents (format: cloudevents) or a layout, not both');
  if (sink.cloudEventsMode !== undefined && sink.format !== 'cloudevents')
    at([...path, 'cloudEventsMode'], 'applies to CloudEvents: set format: cloudevents too');
  if (sink.cloudEventsMode === 'binary' && sink.batch !== undefined)
    at(
      [...path, 'cloudEventsMode'],
      'a batch has no binary mode: use structured (the default), or drop batch',
    );
  if (typeof sink.layout === 'string') {
    const problem = layoutProblem(sink.layout);
    if (problem) at([...path, 'layout'], `not a JSONata expression: ${problem}`);
  }
};

/** Its URL, whose credentials go in a header instead. */
export const webhookUrlFormat = httpUrlFormat('webhook-url', 'give an Authorization header in headers');

export const webhookChecks: Checks = [
  [[], batchKeysNeedBatch],
  [[], oneBodyFormat],
];

/** A checked entry as its spec (durations and sizes accepted by the checks already). */
export function webhookSpecOf(input: WebhookEntry, common: CommonEntrySpec): WebhookSinkSpec {
  const maxWaitMs = checkedMs(input.batchWait);
  return {
    type: 'webhook',
    url: input.url,
    ...common,
    ...(input.headers ? { headers: input.headers } : {}),
    ...(input.secret ? { secret: input.secret } : {}),
    ...(input.batch !== undefined
      ? {
          batch: {
            maxEvents: input.batch,
            ...(maxWaitMs !== undefined ? { maxWaitMs } : {}),
            ...(input.batchBytes !== undefined
              ? { maxBytes: parseSize('batchBytes', input.batchBytes) }
              : {}),
          },
        }
      : {}),
    ...(input.maxRequestsPerSecond !== undefined ? { maxRequestsPerSecond: input.maxRequestsPerSecond } : {}),
    ...(input.format ? { format: input.format } : {}),
    ...(input.cloudEventsMode ? { cloudEventsMode: input.cloudEventsMode } : {}),
    ...(input.layout !== undefined ? { layout: input.layout } : {}),
  };
}

/** A generic receiver may take its token in the path or the query; the HMAC secret is never sent. */
export function webhookCredentials(spec: WebhookSinkSpec): Credential[] {
  return [
    { kind: 'url', value: spec.url },
    ...headerCredentials(spec.headers),
    ...secretCredentials(spec.secret),
  ];
}
