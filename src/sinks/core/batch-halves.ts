// A batch the receiver refused as too large (HTTP 413, Kafka's MESSAGE_TOO_LARGE) goes again as two
// batches, its first half then its second, each split again if it is refused too: what the batch sinks
// (batch-sink.ts) and the webhook's batches (webhook.ts) share. How each half is sent is theirs.
import type { KubediffEvent } from '../../events/event.ts';
import { plural } from '../../util/count-text.ts';

/** Events with their JSON, index for index. */
interface EventBatch {
  events: KubediffEvent[];
  json: string[];
}

/** The two halves of `batch` (the first one the larger when the count is odd), in order. */
export function halvesOf<B extends EventBatch>(batch: B): [B, B] {
  const half = Math.ceil(batch.events.length / 2);
  const slice = (start: number, end: number): B => ({
    ...batch,
    events: batch.events.slice(start, end),
    json: batch.json.slice(start, end),
  });
  return [slice(0, half), slice(half, batch.events.length)];
}

/** The warning a sink gives (once) when it first splits a batch: why, and what spares the extra requests. */
export function splitNote(reason: string, batch: EventBatch): string {
  return `${reason}: a batch of ${plural(batch.events.length, 'event')} was too large for the receiver; sending it in halves (lower batchBytes to spare the extra requests).`;
}
