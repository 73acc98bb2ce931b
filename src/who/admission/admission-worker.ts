// The worker of the admission thread (admission-thread.ts): parses a large review's body and digests the
// object its write produces, normalized exactly as the watch stores that type (the same ignored paths,
// redaction key and `redact:` paths, sent by the thread), so that the thread that answers reviews, serves
// /healthz and feeds the watch never parses or walks a large object. It runs at a lower priority than
// that thread (thread-priority.ts).
//
// Messages in: { types } (the types watched now, with their `redact:` paths; again whenever they change),
// then per review { id, body } (its bytes, transferred). Out: { ready: true } once loaded, then per review
// { id, review } (what the join keeps of it, never the object) or { id, error } (not an AdmissionReview).
import { isMainThread, type MessagePort, parentPort, workerData } from 'node:worker_threads';
import { PathMatcher } from '../../diff/ignore.ts';
import { Normalizer } from '../../diff/normalize.ts';
import { Redactor } from '../../diff/redact.ts';
import type { ResourceType } from '../../kube/types.ts';
import { yieldToMainThread } from '../../util/thread-priority.ts';
import { AdmissionDigests } from './admission-digests.ts';
import { AdmissionBodyError, readAdmissionReview } from './admission-review.ts';
import { type DigestedReview, digestReview } from './review-digest.ts';

export interface AdmissionWorkerStart {
  /** The watch's ignored paths (settings.ignoredPaths). */
  ignoredPaths: readonly string[];
  /** KUBEDIFF_REDACTION_KEY, when set: Secret values and `redact:` paths are hashed with it. */
  redactionKey?: string | undefined;
}

/** A type watched now, with the `redact:` paths that apply to it (Normalizer.rulesFor). */
export interface WatchedType {
  type: ResourceType;
  redactPaths: readonly string[];
}

export type AdmissionWorkerMessage = { types: WatchedType[] } | { id: number; body: Uint8Array };

export type AdmissionWorkerReply = { id: number; review: DigestedReview } | { id: number; error: string };

const typeKey = (type: Pick<ResourceType, 'group' | 'resource'>) => `${type.group}/${type.resource}`;

/** Serves the thread on `port`; `beforeEach` runs before each review is read (tests hold it there). */
export function serveAdmission(
  port: MessagePort,
  start: AdmissionWorkerStart,
  beforeEach?: () => void,
): void {
  // Whoever reaches the port can send large reviews: their work waits for the watch's.
  yieldToMainThread();
  let redactPaths = new Map<string, readonly string[]>();
  const digests = new AdmissionDigests(
    new Normalizer({
      ignore: new PathMatcher(start.ignoredPaths),
      redactor: new Redactor(start.redactionKey),
      redactPaths: (type) => [...(redactPaths.get(typeKey(type)) ?? [])],
    }),
  );
  port.on('message', (message: AdmissionWorkerMessage) => {
    if ('types' in message) {
      redactPaths = new Map(message.types.map((watched) => [typeKey(watched.type), watched.redactPaths]));
      digests.update(message.types.map((watched) => watched.type));
      return;
    }
    let reply: AdmissionWorkerReply;
    try {
      beforeEach?.();
      const { body } = message;
      const text = Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString('utf8');
      reply = {
        id: message.id,
        review: digestReview(readAdmissionReview(text), (write) => digests.of(write)),
      };
    } catch (error) {
      reply = {
        id: message.id,
        error: error instanceof AdmissionBodyError ? error.message : 'the body cannot be read',
      };
    }
    port.postMessage(reply);
  });
  port.postMessage({ ready: true });
}

// Only as a worker's own module: imported elsewhere (a test's worker that holds reviews), it only defines.
if (import.meta.main && parentPort && !isMainThread) {
  serveAdmission(parentPort, workerData as AdmissionWorkerStart);
}
