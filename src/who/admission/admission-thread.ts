// Large admission reviews, parsed and digested in a worker thread (admission-worker.ts) so that a review of
// a huge object never holds the thread that answers the API server's reviews, serves /healthz and feeds
// the watch: that thread only hands the body's bytes over (transferred, not copied) and takes back what the
// join keeps. The worker starts with the first review, runs at a lower priority than the watch, takes one
// review at a time, and is started again by the next review when it stops (a failure, its heap limit).
//
// Bounded (docs/who.md, "Limits"; both derived from the largest review, admissionThreadBounds): the bytes
// of the reviews being read for it (room reserved before a body is read), handed over and not finished
// yet (maxBytes, ADMISSION_THREAD_REQUESTS of the largest); beyond, a review is not handed over
// (reserve() and digest() answer undefined: the caller drops it, counted, and reads no more of its body
// than it needs to answer); and the worker's heap (heapMiB): a review that needs more stops the worker,
// and its review and those waiting are dropped.
import { Worker } from 'node:worker_threads';
import { KubediffError } from '../../util/errors.ts';
import { admissionThreadBounds } from '../../util/memory-budget.ts';
import type {
  AdmissionWorkerMessage,
  AdmissionWorkerReply,
  AdmissionWorkerStart,
  WatchedType,
} from './admission-worker.ts';
import type { DigestedReview } from './review-digest.ts';

// The worker is this module's sibling with its extension: .js in dist/ (what kubediff runs), .ts where
// the tests import the sources.
const WORKER_URL = new URL(
  `./admission-worker${import.meta.url.slice(import.meta.url.lastIndexOf('.'))}`,
  import.meta.url,
);

/** A review not read because kubediff is stopping: nothing to count or log. */
export class ThreadClosed extends KubediffError {}

/** What the thread makes of a body: what the join keeps of the review, or why it is not a review. */
export type ThreadAnswer = { review: DigestedReview } | { error: string };

/** Room taken in the thread for one body, before it is read (ReviewThread.reserve). */
export interface Reservation {
  /**
   * The body, read: digested as ReviewThread.digest() does, in the room taken for it (at most the bytes
   * reserved). The body is the thread's from now.
   */
  digest(body: Buffer): Promise<ThreadAnswer>;
  /** The body will not be digested (cut, gone): its room is let go. Nothing once digest() took it. */
  release(): void;
}

/** Where a large review is parsed and digested (AdmissionServer's `thread`). */
export interface ReviewThread {
  /** The bytes it holds at most. */
  readonly maxBytes: number;
  /**
   * The body's review, read and digested; undefined at once when the bytes already handed over leave no
   * room for it. Rejects when the thread stopped before it was done. The body is the thread's from now.
   */
  digest(body: Buffer): Promise<ThreadAnswer> | undefined;
  /**
   * Room for a body of `bytes` that is still to be read, taken now (it counts in the bound from now on), so
   * that a body that would find no room is never read whole; undefined when there is none.
   */
  reserve(bytes: number): Reservation | undefined;
}

interface Pending {
  resolve: (answer: ThreadAnswer) => void;
  reject: (error: Error) => void;
}

export class AdmissionThread implements ReviewThread {
  readonly maxBytes: number;
  private readonly start: AdmissionWorkerStart;
  private readonly heapMiB: number;
  private readonly workerUrl: URL;
  private readonly pending = new Map<number, Pending>();
  private worker: Promise<Worker> | undefined;
  private types: WatchedType[] = [];
  private bytes = 0;
  private nextId = 1;
  private closed = false;

  /**
   * `maxRequestBytes`: the largest body the listener reads, which both bounds derive from unless given
   * (admissionThreadBounds, docs/who.md "Limits"); `workerUrl`: another worker module speaking
   * admission-worker.ts's messages (a test's, which holds reviews).
   */
  constructor(
    start: AdmissionWorkerStart,
    options: {
      maxRequestBytes: number;
      maxBytes?: number;
      heapMiB?: number;
      workerUrl?: URL;
    },
  ) {
    this.start = start;
    const derived = admissionThreadBounds(options.maxRequestBytes);
    this.maxBytes = options.maxBytes ?? derived.maxBytes;
    this.heapMiB = options.heapMiB ?? derived.heapMiB;
    this.workerUrl = options.workerUrl ?? WORKER_URL;
  }

  /** The types watched now, with their `redact:` paths: reviews of other types name nothing. */
  update(types: WatchedType[]): void {
    this.types = types;
    void this.worker?.then((worker) => worker.postMessage({ types } satisfies AdmissionWorkerMessage));
  }

  /** Bytes handed over and not finished. */
  get inFlight(): number {
    return this.bytes;
  }

  digest(body: Buffer): Promise<ThreadAnswer> | undefined {
    return this.reserve(body.length)?.digest(body);
  }

  reserve(bytes: number): Reservation | undefined {
    if (!this.closed && this.bytes + bytes > this.maxBytes) return undefined;
    this.bytes += bytes;
    let state: 'held' | 'digesting' | 'released' = 'held';
    const release = () => {
      if (state === 'released') return;
      state = 'released';
      this.bytes -= bytes;
    };
    return {
      digest: (body) => {
        if (state !== 'held') throw new KubediffError('a room in the admission thread is used once');
        state = 'digesting';
        const answer = this.closed
          ? Promise.reject(new ThreadClosed('kubediff is stopping'))
          : this.run(body);
        void answer.then(release, release);
        return answer;
      },
      release: () => {
        if (state === 'held') release();
      },
    };
  }

  async close(): Promise<void> {
    this.closed = true;
    const worker = await this.worker?.catch(() => undefined);
    this.worker = undefined;
    await worker?.terminate();
    this.failAll(new ThreadClosed('kubediff is stopping'));
  }

  private async run(body: Buffer): Promise<ThreadAnswer> {
    const worker = await this.started();
    const id = this.nextId++;
    // Transferred when the buffer is the body's own (a large body is), else copied.
    const whole = body.byteOffset === 0 && body.byteLength === body.buffer.byteLength;
    const bytes = new Uint8Array(body.buffer, body.byteOffset, body.byteLength);
    return new Promise<ThreadAnswer>((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      worker.postMessage(
        { id, body: bytes } satisfies AdmissionWorkerMessage,
        whole ? [bytes.buffer as ArrayBuffer] : [],
      );
    });
  }

  /** The worker, once it has loaded and been told the types watched. */
  private started(): Promise<Worker> {
    if (this.worker) return this.worker;
    const started = new Promise<Worker>((resolve, reject) => {
      const worker = new Worker(this.workerUrl, {
        workerData: this.start,
        resourceLimits: { maxOldGenerationSizeMb: this.heapMiB },
      });
      worker.once('message', () => {
        worker.on('message', (reply: AdmissionWorkerReply) => this.answer(reply));
        worker.postMessage({ types: this.types } satisfies AdmissionWorkerMessage);
        resolve(worker);
      });
      const stopped = (why: string) => {
        const failure = new KubediffError(why);
        reject(failure);
        if (this.worker !== started) return;
        this.worker = undefined;
        this.failAll(failure);
      };
      worker.on('error', (error) =>
        stopped(
          (error as NodeJS.ErrnoException).code === 'ERR_WORKER_OUT_OF_MEMORY'
            ? `the thread that reads large reviews ran out of its ${this.heapMiB} MiB heap`
            : `the thread that reads large reviews failed: ${error.message}`,
        ),
      );
      worker.on('exit', () => stopped('the thread that reads large reviews stopped'));
      // It must not keep a stopping process alive.
      worker.unref();
    });
    this.worker = started;
    return started;
  }

  private answer(reply: AdmissionWorkerReply): void {
    const pending = this.pending.get(reply.id);
    if (!pending) return;
    this.pending.delete(reply.id);
    pending.resolve('error' in reply ? { error: reply.error } : { review: reply.review });
  }

  private failAll(error: Error): void {
    for (const pending of this.pending.values()) pending.reject(error);
    this.pending.clear();
  }
}
