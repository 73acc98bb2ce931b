// The sink flags of `kubediff watch` and their environment variables,
// checked and turned into sink specs. Secrets never come from flags (they
// would show in `ps` and in manifests): the HMAC secret, secret webhook headers
// and each sink type's own (its component's flags name them) come from the
// environment. Every problem is a UsageError (exit code 2) that names the
// flag or variable, never the secret itself.

import type { DeadLetterLimits } from '../sinks/core/dead-letter.ts';
import { sinkEnvValue } from '../sinks/core/entry-settings.ts';
import { checkHttpUrl, parseHeaders } from '../sinks/core/receiver-settings.ts';
import type { SinkSpec, WebhookSinkSpec } from '../sinks/core/setup.ts';
import { defaultSinkName } from '../sinks/core/sink-name.ts';
import { SINK_COMPONENTS, sinkFlagNames } from '../sinks/registry.ts';
import { groupedCount } from '../util/count-text.ts';
import { parseDurationSetting } from '../util/duration.ts';
import type { Env } from '../util/environment.ts';
import { UsageError } from '../util/errors.ts';
import { parseCount } from './count.ts';

/** The sink flags as commander hands them over. */
export interface RawSinkFlags {
  webhook?: string[];
  webhookHeader?: string[];
  webhookBatch?: string;
  webhookTimeout?: string;
  deadLetter?: string;
  shutdownTimeout?: string;
  /** The flags of the sink types of the registry (src/sinks/registry.ts), by camel-cased name. */
  [flag: string]: unknown;
}

export interface SinkSettings {
  /** The sinks of the flags; stdout is set up from --output. */
  sinks: SinkSpec[];
  deadLetterFile: string | undefined;
  /** The cap of every dead-letter file (default DEFAULT_DEAD_LETTER_LIMITS). */
  deadLetterLimits?: DeadLetterLimits;
  shutdownTimeoutMs: number;
}

/** The environment variables read here (documented in docs/sinks.md). */
export const SINK_ENV = {
  webhookSecret: 'KUBEDIFF_WEBHOOK_SECRET',
  webhookHeaders: 'KUBEDIFF_WEBHOOK_HEADERS',
} as const;

const DEFAULT_SHUTDOWN_TIMEOUT_MS = 10_000;
const MAX_BATCH = 10_000;

/** --dead-letter given, and no sink flag that delivers over the network (from the flags or beside a file). */
export const DEAD_LETTER_FLAG_WITHOUT_SINK = `--dead-letter applies to the deliveries of the sink flags (--webhook, ${sinkFlagNames().join(', ')}), and none is given (stdout has no dead letters).`;

export function sinkSettingsFromFlags(flags: RawSinkFlags, env: Env = process.env): SinkSettings {
  const shutdownTimeoutMs =
    flags.shutdownTimeout === undefined
      ? DEFAULT_SHUTDOWN_TIMEOUT_MS
      : // 0 is meaningful: exit at once, reporting what is still queued.
        parseDurationSetting('--shutdown-timeout', flags.shutdownTimeout, { allowZero: true });
  const sinks = FLAG_SINKS.flatMap((read) => read(flags, env));
  const deadLetterFile = flags.deadLetter?.trim() || undefined;
  if (deadLetterFile !== undefined && sinks.length === 0) {
    throw new UsageError(DEAD_LETTER_FLAG_WITHOUT_SINK);
  }
  return { sinks, deadLetterFile, shutdownTimeoutMs };
}

/**
 * The flags' sinks, one reader per kind, read (and checked) in this order: the order of the sinks, and
 * of the problems reported.
 */
const FLAG_SINKS: readonly ((flags: RawSinkFlags, env: Env) => SinkSpec[])[] = [
  webhookSpecsFromFlags,
  ...SINK_COMPONENTS.flatMap((component) => (component.fromFlags ? [component.fromFlags] : [])),
];

/** --webhook (repeatable), all of them with the same headers, secret, batch and timeout. */
function webhookSpecsFromFlags(flags: RawSinkFlags, env: Env): WebhookSinkSpec[] {
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
    ...parseHeaders(
      sinkEnvValue(env, SINK_ENV.webhookHeaders)?.split(/\r?\n/) ?? [],
      SINK_ENV.webhookHeaders,
    ),
    ...parseHeaders(flags.webhookHeader ?? [], '--webhook-header'),
  };
  const secret = sinkEnvValue(env, SINK_ENV.webhookSecret);
  const batch = flags.webhookBatch === undefined ? undefined : batchSize(flags.webhookBatch);
  const timeoutMs =
    flags.webhookTimeout === undefined
      ? undefined
      : parseDurationSetting('--webhook-timeout', flags.webhookTimeout);
  return webhooks.map((url) => {
    checkHttpUrl(url, 'invalid --webhook', `give an Authorization header in ${SINK_ENV.webhookHeaders}`);
    const spec: WebhookSinkSpec = { type: 'webhook', url };
    if (Object.keys(headers).length > 0) spec.headers = headers;
    if (secret) spec.secret = secret;
    if (batch !== undefined) spec.batch = { maxEvents: batch };
    if (timeoutMs !== undefined) spec.timeoutMs = timeoutMs;
    return spec;
  });
}

function batchSize(text: string): number {
  return parseCount(
    '--webhook-batch',
    text,
    `use a number of events per request from 1 to ${groupedCount(MAX_BATCH)}`,
    MAX_BATCH,
  );
}

/** For the startup line: where events go, URLs elided. */
export function describeSinkSpec(spec: SinkSpec): string {
  return spec.name || defaultSinkName(spec);
}
