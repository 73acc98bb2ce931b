// kubediff's events as CloudEvents 1.0 (docs/sinks.md, "CloudEvents"): structured mode (a batch as
// cloudevents-batch+json) or binary mode (`ce-*` headers). `id` is the event's id (receivers deduplicate
// by id and source), `type` dev.kubediff.object.added/.updated/.deleted (or .digest, .story), `source`
// kubediff/<cluster>, `subject` the object's API path, `time` the change's time, data JSON.
import type { KubediffEvent } from '../../../events/event.ts';
import type { Story } from '../../../events/story.ts';
import { objectApiPath } from '../../../kube/types.ts';
import type { DigestPayload } from '../../core/digest.ts';

export const CLOUDEVENTS_MODES = ['structured', 'binary'] as const;
export type CloudEventsMode = (typeof CLOUDEVENTS_MODES)[number];

export const CLOUDEVENTS_CONTENT_TYPE = 'application/cloudevents+json';
export const CLOUDEVENTS_BATCH_CONTENT_TYPE = 'application/cloudevents-batch+json';

/** The context attributes of one CloudEvent (the data apart). */
export interface CloudEventAttributes {
  specversion: '1.0';
  id: string;
  type: string;
  source: string;
  subject?: string;
  time: string;
  datacontenttype: 'application/json';
}

const TYPE_PREFIX = 'dev.kubediff';

/** kubediff/<cluster> (URI-encoded), or kubediff without a cluster name. */
export function cloudEventSource(cluster: string | undefined): string {
  return cluster ? `kubediff/${encodeURIComponent(cluster)}` : 'kubediff';
}

export function eventAttributes(event: KubediffEvent): CloudEventAttributes {
  return {
    specversion: '1.0',
    id: event.id,
    type: `${TYPE_PREFIX}.object.${event.type.toLowerCase()}`,
    source: cloudEventSource(event.cluster),
    subject: objectApiPath(event.object),
    time: event.time,
    datacontenttype: 'application/json',
  };
}

export function digestAttributes(digest: DigestPayload): CloudEventAttributes {
  return {
    specversion: '1.0',
    id: digest.id,
    type: `${TYPE_PREFIX}.digest`,
    source: cloudEventSource(digest.cluster),
    time: digest.to,
    datacontenttype: 'application/json',
  };
}

export function storyAttributes(story: Story): CloudEventAttributes {
  const { owner } = story;
  return {
    specversion: '1.0',
    id: story.id,
    type: `${TYPE_PREFIX}.story`,
    source: cloudEventSource(story.cluster),
    subject: `${owner.kind}/${owner.namespace ? `${owner.namespace}/` : ''}${owner.name}`,
    time: story.to,
    datacontenttype: 'application/json',
  };
}

/** A structured-mode CloudEvent: the attributes and the data (JSON text, serialized once) in one object. */
export function structuredCloudEvent(attributes: CloudEventAttributes, dataJson: string): string {
  return `${JSON.stringify(attributes).slice(0, -1)},"data":${dataJson}}`;
}

/** The binary mode's headers: each attribute as ce-<name>, the data's type as content-type. */
export function binaryHeaders(attributes: CloudEventAttributes): Record<string, string> {
  const headers: Record<string, string> = { 'content-type': attributes.datacontenttype };
  for (const [name, value] of Object.entries(attributes)) {
    if (name !== 'datacontenttype' && value !== undefined) headers[`ce-${name}`] = encodeHeaderValue(value);
  }
  return headers;
}

/**
 * A header value as the HTTP binding asks: printable ASCII kept, anything else (and '%', '"') percent-
 * encoded as UTF-8, so that a name with non-ASCII characters or a line break cannot break the request.
 */
function encodeHeaderValue(value: string): string {
  return value.replace(/[^\x20-\x7e]|[%"]/gu, (char) => encodeURIComponent(char));
}
