// What the chat platforms that post through one webhook URL share as components (src/sinks/component.ts):
// an entry of a webhook URL (a credential) and a pace, the same flag shape (--<type>-webhook, or its
// environment variable), the same spec and credentials, and a factory that puts the platform's renderer
// on the chat core (chat.ts), imported only when such a sink is created. Each platform's folder gives its
// type, flag, variable, docs anchor and renderer. Slack, which posts through a webhook or as a bot, takes
// the pieces it shares with them from here: a webhook URL from its flag or variable, and the chat core's
// options.
import type { Credential } from '../../../util/credentials.ts';
import type { Env } from '../../../util/environment.ts';
import { type FlagSpec, flagName, flagProperty } from '../../../util/flag-spec.ts';
import { redactUrl } from '../../../util/url.ts';
import type { CommonEntrySpec, HttpSinkSpec, SinkComponent, SinkContext } from '../../component.ts';
import { commonKeys, deliveryKeys, durationOrZero } from '../../core/entry-schema.ts';
import { checkedMs, sinkEnvValue } from '../../core/entry-settings.ts';
import { checkHttpUrl } from '../../core/receiver-settings.ts';
import { httpOptions, storiesOption } from '../../core/sink-options.ts';
import type { ChatPlatform } from './chat.ts';

/** A sink of a chat platform that takes a webhook URL: the URL (a credential) and the chat core's pace. */
export interface ChatWebhookSpec<T extends string> extends HttpSinkSpec {
  type: T;
  webhookUrl: string;
  minIntervalMs?: number;
  /** Its queue, in bytes of the events' JSON. */
  queueMaxBytes?: number;
}

/** The entry of such a platform: a webhook URL (from ${VAR} in the file) and its pace. */
export function chatWebhookSchema<T extends string>(type: T) {
  return {
    type: 'object',
    properties: {
      type: { const: type },
      ...commonKeys,
      ...deliveryKeys,
      webhookUrl: { type: 'string', format: 'http-url' },
      // 0: no pace of its own.
      minInterval: durationOrZero,
    },
    required: ['type', 'webhookUrl'],
    additionalProperties: false,
  } as const;
}

/** The platform's renderer and its default pace (its documented rate limit). */
export interface ChatPlatformModule {
  create: (url: string) => ChatPlatform;
  minIntervalMs: number;
}

/** What a platform's folder says of itself. */
export interface ChatWebhookType<T extends string> {
  type: T;
  schema: ReturnType<typeof chatWebhookSchema<T>>;
  /** Its flag (the URL) and its description, which names `variable`. */
  flag: FlagSpec;
  /** The environment variable that may give the URL instead of the flag. */
  variable: string;
  /** Its renderer, imported when a sink of it is created. */
  platform: () => Promise<ChatPlatformModule>;
  docs: string;
}

/** What the component reads of its entry (the platform's `Entry`, derived from its schema, has all of it). */
interface ChatWebhookEntry {
  type: string;
  webhookUrl: string;
  minInterval?: string | undefined;
}

/**
 * A webhook URL from its flag, or else its environment variable; checked, the problem naming whichever gave
 * it. Undefined when neither is set.
 */
export function webhookUrlFrom(
  flags: object,
  flag: FlagSpec,
  variable: string,
  env: Env,
): string | undefined {
  const value = (flags as Record<string, unknown>)[flagProperty(flagName(flag))];
  const given = typeof value === 'string' ? value.trim() : '';
  const webhookUrl = given || sinkEnvValue(env, variable);
  if (webhookUrl) checkHttpUrl(webhookUrl, `invalid ${given ? flagName(flag) : variable}`);
  return webhookUrl || undefined;
}

/** What every sink on the chat core is given besides its platform and pace: name, log, queue, stories, HTTP. */
export function chatCoreOptions(
  spec: HttpSinkSpec & { queueMaxBytes?: number },
  context: SinkContext,
  defaultName: string,
) {
  return {
    name: context.unique(spec.name ?? defaultName),
    log: context.runtime.log,
    ...(spec.queueMaxBytes !== undefined ? { capacityBytes: spec.queueMaxBytes } : {}),
    ...storiesOption(spec),
    ...httpOptions(spec, context),
  };
}

/** The component of a chat platform that posts through a webhook URL; `Entry`: its schema's entry type. */
export function chatWebhookComponent<Entry extends ChatWebhookEntry, T extends Entry['type'] = Entry['type']>(
  own: ChatWebhookType<T>,
): SinkComponent<Entry, ChatWebhookSpec<T>> {
  return {
    types: [own.type],
    schemas: { [own.type]: own.schema } as { [K in T]: ReturnType<typeof chatWebhookSchema<T>> },
    flags: [own.flag],
    fromFlags(flags: object, env: Env): ChatWebhookSpec<T>[] {
      const webhookUrl = webhookUrlFrom(flags, own.flag, own.variable, env);
      return webhookUrl ? [{ type: own.type, webhookUrl }] : [];
    },
    spec(entry: Entry, common: CommonEntrySpec): ChatWebhookSpec<T> {
      const minIntervalMs = checkedMs(entry.minInterval);
      return {
        type: entry.type as T,
        webhookUrl: entry.webhookUrl,
        ...common,
        ...(minIntervalMs !== undefined ? { minIntervalMs } : {}),
      };
    },
    name: (spec) => `${spec.type} ${redactUrl(spec.webhookUrl)}`,
    credentials: (spec): Credential[] => [{ kind: 'url', value: spec.webhookUrl }],
    storiesByDefault: true,
    chatQueue: true,
    async create(spec, context) {
      const [{ ChatSink }, platform] = await Promise.all([import('./chat.ts'), own.platform()]);
      return new ChatSink({
        ...chatCoreOptions(spec, context, this.name(spec)),
        platform: platform.create(spec.webhookUrl),
        minIntervalMs: spec.minIntervalMs ?? platform.minIntervalMs,
      });
    },
    docs: own.docs,
  };
}
