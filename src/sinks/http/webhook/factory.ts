// The webhook sink type as src/sinks/registry.ts lists it (src/sinks/component.ts): its settings from
// config.ts, and a factory that imports the implementation (webhook.ts) only when a webhook sink is
// created, and a layout's thread (layout-thread.ts) only for a webhook with a layout.

import { redactUrl } from '../../../util/url.ts';
import type { SinkComponent } from '../../component.ts';
import { httpOptions, storiesOption } from '../../core/sink-options.ts';
import {
  type WebhookEntry,
  type WebhookSinkSpec,
  webhookChecks,
  webhookCredentials,
  webhookFlags,
  webhookSchema,
  webhookSpecOf,
  webhookSpecsFromFlags,
  webhookUrlFormat,
} from './config.ts';
import type { WebhookFormat } from './webhook-body.ts';

export const webhookComponent: SinkComponent<WebhookEntry, WebhookSinkSpec> = {
  types: ['webhook'],
  schemas: { webhook: webhookSchema },
  formats: [webhookUrlFormat],
  checks: webhookChecks,
  flags: webhookFlags,
  fromFlags: webhookSpecsFromFlags,
  spec: webhookSpecOf,
  name: (spec) => `webhook ${redactUrl(spec.url)}`,
  credentials: webhookCredentials,
  async create(spec, context) {
    const { WebhookSink } = await import('./webhook.ts');
    return new WebhookSink({
      url: spec.url,
      name: context.unique(spec.name ?? this.name(spec)),
      log: context.runtime.log,
      format: await webhookFormat(spec),
      ...(spec.headers ? { headers: spec.headers } : {}),
      ...(spec.secret ? { secret: spec.secret } : {}),
      ...(spec.batch ? { batch: spec.batch } : {}),
      ...(spec.queue ? { queue: spec.queue } : {}),
      ...(spec.maxRequestsPerSecond !== undefined ? { maxRequestsPerSecond: spec.maxRequestsPerSecond } : {}),
      ...storiesOption(spec),
      ...httpOptions(spec, context),
    });
  },
  docs: 'docs/sinks.md#webhooks',
};

/**
 * A webhook's body format. A layout gets a thread of its own, started by the sink's first request (the
 * config checks have compiled the layout already).
 */
async function webhookFormat(spec: WebhookSinkSpec): Promise<WebhookFormat> {
  if (spec.layout !== undefined) {
    const { LayoutThread } = await import('./layout-thread.ts');
    return { kind: 'layout', layout: new LayoutThread(spec.layout) };
  }
  if (spec.format === 'cloudevents')
    return { kind: 'cloudevents', mode: spec.cloudEventsMode ?? 'structured' };
  return { kind: 'json' };
}
