// What an admission review leaves for the join, worked out where its body was parsed (this thread for a
// small review, the admission thread for a large one: admission-thread.ts): why it names no change
// kubediff can report, or the write it names with what it can be checked by (the digest of the object
// that write produces, a DELETE's old object's, a scale's replicas). The objects go no further than this.
import type { WriteChecks } from './admission-digests.ts';
import type { IgnoreReason, ReviewedWrite, ReviewReading } from './admission-review.ts';

/** A review's write without its objects. */
export type NamedWrite = Omit<ReviewedWrite, 'object' | 'oldObject'>;

export type DigestedReview =
  | {
      requestUID: string;
      apiVersion: string;
      ignored: IgnoreReason;
      /** Of `digest_failed`: why the object could not be digested, for the log line. */
      digestFailure?: string;
    }
  | { requestUID: string; apiVersion: string; write: NamedWrite; checks: WriteChecks };

/**
 * `digest`: what the write can be checked by; `{}` when nothing; undefined when kubediff does not watch the
 * resource; it throws for an object it cannot take (AdmissionDigests.of).
 */
export function digestReview(
  reading: ReviewReading,
  digest: (write: ReviewedWrite) => WriteChecks | undefined,
): DigestedReview {
  const { requestUID, apiVersion } = reading;
  if ('ignored' in reading) return { requestUID, apiVersion, ignored: reading.ignored };
  const { object: _object, oldObject: _oldObject, ...write } = reading.write;
  let checks: WriteChecks | undefined;
  try {
    checks = digest(reading.write);
  } catch (error) {
    // Dropped, not kept unchecked: a review that cannot be checked is what a forger would post.
    const digestFailure = error instanceof RangeError ? 'nested too deep' : 'not an object kubediff can read';
    return { requestUID, apiVersion, ignored: 'digest_failed', digestFailure };
  }
  if (checks === undefined) return { requestUID, apiVersion, ignored: 'not_watched' };
  return { requestUID, apiVersion, write, checks };
}
