// What a webhook request carries, by the sink's `format`: the event's JSON as the contract prints it (the
// default; a JSON array for a batch), a CloudEvent (cloudevents.ts, structured or binary), or the body a
// `layout:` builds (layout.ts, in a thread of its own: layout-thread.ts). Computed once per request,
// before its retries.
import type { KubediffEvent } from '../../../events/event.ts';
import type { Story } from '../../../events/story.ts';
import type { Digest } from '../../core/digest.ts';
import {
  binaryHeaders,
  CLOUDEVENTS_BATCH_CONTENT_TYPE,
  CLOUDEVENTS_CONTENT_TYPE,
  type CloudEventAttributes,
  type CloudEventsMode,
  digestAttributes,
  eventAttributes,
  storyAttributes,
  structuredCloudEvent,
} from './cloudevents.ts';
import type { LayoutRenderer } from './layout-thread.ts';

export type WebhookWork =
  | { kind: 'event'; event: KubediffEvent; json: string }
  | { kind: 'batch'; events: KubediffEvent[]; json: string[] }
  | { kind: 'digest'; digest: Digest<KubediffEvent> }
  | { kind: 'story'; story: Story; json: string };

export type WebhookFormat =
  | { kind: 'json' }
  | { kind: 'cloudevents'; mode: CloudEventsMode }
  | { kind: 'layout'; layout: LayoutRenderer };

export interface WebhookPayload {
  body: string;
  /** content-type and, in CloudEvents' binary mode, the ce-* headers. */
  headers: Record<string, string>;
}

const JSON_TYPE = { 'content-type': 'application/json' };

/** The body and its headers; throws a LayoutError when a layout cannot make a body of this work. */
export async function webhookPayload(format: WebhookFormat, work: WebhookWork): Promise<WebhookPayload> {
  const data = dataJson(work);
  if (format.kind === 'json') return { body: data, headers: JSON_TYPE };
  if (format.kind === 'layout') {
    // The JSON text, parsed in the layout's thread: the expression never sees the objects other sinks share.
    return { body: await format.layout.render(data), headers: JSON_TYPE };
  }
  if (format.mode === 'binary') {
    // A batch has no binary form (the settings refuse batch with binary mode): sent as structured.
    if (work.kind !== 'batch') return { body: data, headers: binaryHeaders(attributesOf(work)) };
  }
  if (work.kind === 'batch') {
    const events = work.events.map((event, index) =>
      structuredCloudEvent(eventAttributes(event), work.json[index] as string),
    );
    return { body: `[${events.join(',')}]`, headers: { 'content-type': CLOUDEVENTS_BATCH_CONTENT_TYPE } };
  }
  return {
    body: structuredCloudEvent(attributesOf(work), data),
    headers: { 'content-type': CLOUDEVENTS_CONTENT_TYPE },
  };
}

/** The JSON the contract sends for this work: the same text JSON.stringify would give, serialized once. */
function dataJson(work: WebhookWork): string {
  if (work.kind === 'event' || work.kind === 'story') return work.json;
  if (work.kind === 'batch') return `[${work.json.join(',')}]`;
  return JSON.stringify(work.digest.toPayload());
}

function attributesOf(work: Exclude<WebhookWork, { kind: 'batch' }>): CloudEventAttributes {
  if (work.kind === 'event') return eventAttributes(work.event);
  if (work.kind === 'story') return storyAttributes(work.story);
  return digestAttributes(work.digest.toPayload());
}
