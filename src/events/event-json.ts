// An event's JSON text, as the contract prints it (without the newline), serialized once however many
// consumers need it: the router hands one event object to each sink in turn (stdout's JSON lines, the
// webhook and Kafka queues, a chat sink's size accounting), then the state recorder writes it, so the text
// of the last event asked for is kept and reused. Events are not changed once built (src/events/event-builder.ts), so the same object always has
// the same text.
import type { KubediffEvent } from './event.ts';

let lastEvent: KubediffEvent | undefined;
let lastJson = '';
let lastBytes: number | undefined;

/** JSON.stringify(event), computed once per event object in a row; throws what JSON.stringify throws. */
export function eventJson(event: KubediffEvent): string {
  if (event !== lastEvent) {
    lastJson = JSON.stringify(event);
    lastEvent = event;
    lastBytes = undefined;
  }
  return lastJson;
}

/** The UTF-8 size of eventJson(event): what it takes on the wire and in a queue's byte budget; measured once. */
export function eventJsonBytes(event: KubediffEvent): number {
  const json = eventJson(event);
  lastBytes ??= Buffer.byteLength(json);
  return lastBytes;
}

const lengths = new WeakMap<KubediffEvent, number>();

/**
 * eventJson(event).length, remembered for as long as the event lives: a story counts it when the event
 * joins (its open-story budget), and the digest that holds the closed story counts it again later, when
 * eventJson's memory of one event has long moved on; the text is not made twice for it.
 */
export function eventJsonLength(event: KubediffEvent): number {
  let length = lengths.get(event);
  if (length === undefined) {
    length = eventJson(event).length;
    lengths.set(event, length);
  }
  return length;
}
