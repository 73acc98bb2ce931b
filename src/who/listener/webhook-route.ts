// What a route on the webhook listener (webhook-listener.ts) is: the handler of one path's bodies (audit
// batches, admission reviews, peers' records), the plan it makes for a body before it is read, and its answer.
import type { WebhookOutcome } from './webhook-outcomes.ts';

/** A route's answer to a body: its status and JSON body; `after` runs once it is sent. */
export interface WebhookAnswer {
  status: number;
  body: string;
  /** For a 4xx or 5xx: why, in the log line (logged once per outcome), and its outcome (bad_request). */
  why?: string;
  outcome?: WebhookOutcome;
  after?: () => void;
}

export interface WebhookRoute {
  /**
   * The whole body (within the bound): its answer, at once or (a body handed to another thread) later.
   * The body is the route's from then on: the listener holds no reference to it.
   */
  receive(body: Buffer): WebhookAnswer | Promise<WebhookAnswer>;
  /**
   * Before a body is read: what of it the route keeps, from its length (Content-Length; without one, the
   * most it may be: maxRequestBytes). Without it, the whole body goes to receive().
   */
  plan?(bytes: number): BodyPlan;
}

/**
 * What a route keeps of a body, decided before it is read: its first `keepBytes` (the rest is read and
 * dropped as it arrives, never held), given to `receive` with the body's whole size once it has arrived.
 */
export interface BodyPlan {
  keepBytes: number;
  receive(kept: Buffer, size: number): WebhookAnswer | Promise<WebhookAnswer>;
  /** The body will never reach receive() (cut, refused, its client gone): what the plan holds is let go. */
  abandon?(): void;
}
