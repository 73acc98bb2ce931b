// A sink's name when the config gives none, for logs, metrics, the start-up line and the shutdown report:
// 'stdout', 'slack #alerts', 'teams https://…/…',
// 'otlp http://collector:4318/' (URL paths elided: they may hold credentials). The one
// place they are made: setup.ts names each sink by it, and the start-up line (describeSinkSpec) says the same.
import { redactUrl } from '../../util/url.ts';
import { type RegisteredType, sinkComponent } from '../registry.ts';

/** What a sink's default name is made of (the sink spec's fields, structurally). */
export type SinkNameSource =
  | { type: 'stdout' }
  | { type: 'slack'; webhookUrl?: string | undefined; channel?: string | undefined }
  | { type: 'teams' | 'discord' | 'mattermost' | 'google-chat'; webhookUrl: string }
  | { type: RegisteredType };

export function defaultSinkName(spec: SinkNameSource): string {
  const component = sinkComponent(spec.type);
  if (component) return component.name(spec);
  switch (spec.type) {
    case 'stdout':
      return 'stdout';
    case 'slack':
      return spec.webhookUrl !== undefined
        ? `slack ${redactUrl(spec.webhookUrl)}`
        : `slack ${slackChannelLabel(spec.channel ?? '')}`;
    default:
      return `${spec.type} ${redactUrl((spec as { webhookUrl: string }).webhookUrl)}`;
  }
}

/** '#alerts' for 'alerts'; a channel ID (C0123456789) or '#name' as it is. */
export function slackChannelLabel(channel: string): string {
  return channel.startsWith('#') || /^[CGD][A-Z0-9]{6,}$/.test(channel) ? channel : `#${channel}`;
}
