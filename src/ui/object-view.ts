// /api/v1/object's answers, built in a worker thread (object-view-worker.ts) so that a large object's
// history (thousands of keys, replaced many times) never holds the thread that receives, diffs and
// delivers events, nor /healthz: that thread only passes the stored text in and the answer's bytes out.
//
// Bounded (docs/ui.md, "Limits"): what one answer reads (OBJECT_LIMITS.maxBytes, applied by the reader,
// src/state/timeline-reader.ts), how long one answer may take (timeMs: beyond it the worker is stopped,
// and started again for the next), and how many wait (queue: beyond it a request is refused with
// ReaderBusy, 503). One answer is built at a time.
import { Worker } from 'node:worker_threads';
import { QueryGate } from '../state/query-gate.ts';
import type { ObjectRecords } from '../state/timeline-reader.ts';
import { formatDuration } from '../util/duration.ts';
import { KubediffError } from '../util/errors.ts';
import type { ObjectViewJob, ObjectViewReply } from './object-view-worker.ts';

export interface ObjectLimits {
  /** The JSON of one object's events read for one answer, and of its last state. */
  maxBytes: number;
  /** Building one answer. */
  timeMs: number;
  /** Answers waiting or being built. */
  queue: number;
}

/** Documented in docs/ui.md ("Limits"). */
export const OBJECT_LIMITS: ObjectLimits = {
  maxBytes: 16 * 1024 * 1024,
  timeMs: 10_000,
  queue: 4,
};

/** An answer that took longer than OBJECT_LIMITS.timeMs: not built (the UI answers 503). */
export class ObjectViewTooSlow extends KubediffError {}

// The worker is this module's sibling with its extension: .js in dist/, .ts where tests import sources.
const WORKER_URL = new URL(
  `./object-view-worker${import.meta.url.slice(import.meta.url.lastIndexOf('.'))}`,
  import.meta.url,
);

interface Pending {
  resolve: (body: Uint8Array) => void;
  reject: (error: Error) => void;
}

export class ObjectViews {
  private readonly limits: ObjectLimits;
  private readonly gate: QueryGate;
  private worker: Promise<Worker> | undefined;
  private pending: { id: number; settle: Pending } | undefined;
  /** Jobs wait here, in order, while one is built. */
  private turn: Promise<unknown> = Promise.resolve();
  private nextId = 1;
  private closed = false;

  constructor(options: { limits?: Partial<ObjectLimits> | undefined } = {}) {
    this.limits = { ...OBJECT_LIMITS, ...options.limits };
    this.gate = new QueryGate(this.limits.queue);
  }

  /** What the reader may read for one answer (ObjectRecordsQuery.maxBytes). */
  get maxBytes(): number {
    return this.limits.maxBytes;
  }

  /**
   * The answer's bytes (JSON) from the records `read` returns; rejects with ReaderBusy when too many wait,
   * ObjectViewTooSlow past the time bound. The read runs inside the gate: a refused request reads nothing
   * (each read may bring two times maxBytes onto this thread).
   */
  render(read: () => Promise<ObjectRecords>, wanted: readonly number[]): Promise<Uint8Array> {
    return this.gate.run(async () => {
      const records = await read();
      const built = this.turn.then(() => this.build(records, wanted));
      this.turn = built.catch(() => {});
      return built;
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    const worker = await this.worker?.catch(() => undefined);
    this.worker = undefined;
    this.fail(new KubediffError('the UI is closing.'));
    await worker?.terminate();
  }

  private async build(records: ObjectRecords, wanted: readonly number[]): Promise<Uint8Array> {
    if (this.closed) throw new KubediffError('the UI is closing.');
    // The time bound counts from a worker ready to build (not the start of a new one).
    const worker = await this.started();
    const id = this.nextId++;
    return new Promise<Uint8Array>((resolve, reject) => {
      const timer = setTimeout(() => {
        // Stopped, not waited for: the next answer gets a new worker.
        this.worker = undefined;
        void worker.terminate();
        this.fail(
          new ObjectViewTooSlow(
            `building this object's answer took longer than ${formatDuration(this.limits.timeMs)}, the most one answer may take; ask for fewer of its events (limit).`,
          ),
        );
      }, this.limits.timeMs);
      const settle = (done: () => void) => {
        clearTimeout(timer);
        this.pending = undefined;
        done();
      };
      this.pending = {
        id,
        settle: {
          resolve: (body) => settle(() => resolve(body)),
          reject: (error) => settle(() => reject(error)),
        },
      };
      worker.postMessage({
        id,
        records,
        wanted: [...wanted],
        maxBytes: this.limits.maxBytes,
      } satisfies ObjectViewJob);
    });
  }

  /** The worker, once it has loaded and says it is ready. */
  private started(): Promise<Worker> {
    if (this.worker) return this.worker;
    const started = new Promise<Worker>((resolve, reject) => {
      const worker = new Worker(WORKER_URL);
      worker.once('message', () => {
        worker.on('message', (reply: ObjectViewReply) => this.answer(reply));
        resolve(worker);
      });
      worker.on('error', (error) => {
        const failure = new KubediffError(`the UI's worker failed: ${error.message}`);
        reject(failure);
        if (this.worker === started) this.worker = undefined;
        this.fail(failure);
      });
      worker.on('exit', () => {
        reject(new KubediffError("the UI's worker stopped."));
        if (this.worker !== started) return;
        this.worker = undefined;
        this.fail(new KubediffError("the UI's worker stopped."));
      });
      // It must not keep a stopping process alive.
      worker.unref();
    });
    this.worker = started;
    return started;
  }

  private answer(reply: ObjectViewReply): void {
    const pending = this.pending;
    if (!pending || pending.id !== reply.id) return;
    if ('error' in reply) pending.settle.reject(new KubediffError(`cannot build the answer: ${reply.error}`));
    else pending.settle.resolve(reply.body);
  }

  private fail(error: Error): void {
    this.pending?.settle.reject(error);
  }
}
