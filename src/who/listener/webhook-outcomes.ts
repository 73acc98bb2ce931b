// What became of a request to one of kubediff's webhooks (webhook-listener.ts), as the metrics count it:
// accepted, or refused as unauthorized (401), forbidden (403), bad_request, too_large (413), busy (503),
// not_allowed (405), timeout (408: the body did not arrive in time), or internal_error (500: a bug of
// kubediff's, contained to that request).
export const WEBHOOK_OUTCOMES = [
  'accepted',
  'unauthorized',
  'forbidden',
  'bad_request',
  'too_large',
  'busy',
  'not_allowed',
  'timeout',
  'internal_error',
] as const;

export type WebhookOutcome = (typeof WEBHOOK_OUTCOMES)[number];
