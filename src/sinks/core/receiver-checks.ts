// What a receiver's settings must be, whether they come from flags, the environment or the config file:
// HTTP header names (and the headers kubediff sets itself, which no setting may replace). Each source
// words its own message around these answers.

const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/** The headers the webhook sink sets on each request (docs/sinks.md), by what they say. */
export const WEBHOOK_HEADERS = {
  signature: 'x-kubediff-signature',
  kind: 'x-kubediff-kind',
  attempt: 'x-kubediff-attempt',
  eventId: 'x-kubediff-event-id',
  batchSize: 'x-kubediff-batch-size',
  digestId: 'x-kubediff-digest-id',
  storyId: 'x-kubediff-story-id',
} as const;

/** Headers undici or HTTP itself owns, and the ones kubediff sets. */
const RESERVED_HEADERS = new Set<string>([
  'host',
  'content-length',
  'transfer-encoding',
  'connection',
  'keep-alive',
  'upgrade',
  'expect',
  'content-type',
  ...Object.values(WEBHOOK_HEADERS),
]);

/** An HTTP header name (a token: letters, digits and !#$%&'*+.^_`|~-). */
export function isHeaderName(name: string): boolean {
  return HEADER_NAME.test(name);
}

/** A header kubediff sets on every request (or HTTP itself owns): no setting may replace it. */
export function isReservedHeader(name: string): boolean {
  return RESERVED_HEADERS.has(name.toLowerCase());
}
