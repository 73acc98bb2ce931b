// What an admission review leaves for the join, worked out where its body was parsed (this thread for a
// small review, the admission thread for a large one: admission-thread.ts): why it names no change
// kubediff can report, or the write it names with the digest of the object that write produces. The object
// goes no further than this.
import { errorMessage } from '../util/errors.ts';
import type { IgnoreReason, ReviewedWrite, ReviewReading } from './admission-review.ts';

/** A review's write without its object. */
export type NamedWrite = Omit<ReviewedWrite, 'object'>;

export type DigestedReview =
  | { requestUID: string; apiVersion: string; ignored: IgnoreReason }
  | {
      requestUID: string;
      apiVersion: string;
      write: NamedWrite;
      digest?: string;
      /** Why the object could not be digested (it is then unverifiable), for a debug line. */
      digestFailure?: string;
    };

/**
 * `digest`: the digest of the object a write produces, as the watch stores its type; `{}` when it cannot
 * be told; undefined when kubediff does not watch the resource (AdmissionDigests.of).
 */
export function digestReview(
  reading: ReviewReading,
  digest: (write: ReviewedWrite) => { digest?: string } | undefined,
): DigestedReview {
  const { requestUID, apiVersion } = reading;
  if ('ignored' in reading) return { requestUID, apiVersion, ignored: reading.ignored };
  const { object: _object, ...write } = reading.write;
  let verdict: { digest?: string } | undefined;
  let digestFailure: string | undefined;
  try {
    verdict = digest(reading.write);
  } catch (error) {
    // An object the normalizer cannot take (nested too deep, say) is still a write: unverifiable.
    digestFailure = errorMessage(error);
    verdict = {};
  }
  if (verdict === undefined) return { requestUID, apiVersion, ignored: 'not_watched' };
  return {
    requestUID,
    apiVersion,
    write,
    ...(verdict.digest ? { digest: verdict.digest } : {}),
    ...(digestFailure ? { digestFailure } : {}),
  };
}
