// A webhook's layout, evaluated in a worker thread of its own (layout-worker.ts), so that the thread that
// watches, serves /healthz and feeds every other sink never runs an expression. JSONata evaluates to its
// end without turning the event loop, and reads its clock only between its steps: a runaway expression
// (a loop, a regular expression that backtracks without end) would hold the whole process. Here it holds
// only the worker, which is stopped (terminated) when an evaluation runs over LAYOUT_LIMITS.timeout of
// its thread's CPU time (wall time before Node 24.6); the next evaluation gets a new worker. One thread
// per sink that has a layout, started on its first request; this module is imported only when a layout
// is configured.
import { Worker } from 'node:worker_threads';
import { formatDuration } from '../util/duration.ts';
import { formatSize } from '../util/size.ts';
import { LAYOUT_LIMITS, LayoutError } from './layout.ts';
import type { LayoutJob, LayoutReady, LayoutReply, LayoutStart } from './layout-worker.ts';

// The worker is this module's sibling with its extension: .js in dist/ (what kubediff runs), .ts where
// the tests import the sources.
const WORKER_URL = new URL(
  `./layout-worker${import.meta.url.slice(import.meta.url.lastIndexOf('.'))}`,
  import.meta.url,
);

/** What makes a webhook's body from its data: a layout (or, in tests, anything that does the same). */
export interface LayoutRenderer {
  /** The body made of `json` (the request's data); rejects with a LayoutError when there is none. */
  render(json: string): Promise<string>;
  close(): Promise<void>;
}

/**
 * How long, in time limits, an evaluation may wait for a core before the clock stops it whatever its
 * thread's CPU time says (10 s with the 500 ms limit): a bound on waiting, not a second limit.
 */
const STARVED_LIMIT = 20;

interface Job {
  id: number;
  resolve: (body: string) => void;
  reject: (error: LayoutError) => void;
}

export class LayoutThread implements LayoutRenderer {
  private readonly text: string;
  private readonly timeoutMs: number;
  /** The id of the last job the worker answered (written by the worker before it posts the answer). */
  private readonly finished = new Int32Array(new SharedArrayBuffer(4));
  /** The id of the last job the worker began, and its thread's CPU time then (µs): written by the worker. */
  private readonly begun = new Int32Array(new SharedArrayBuffer(4));
  private readonly cpuAtBegin = new Float64Array(new SharedArrayBuffer(8));
  private worker: Promise<Worker> | undefined;
  private job: Job | undefined;
  /** Evaluations wait here, in order, while one runs (a sink sends one request at a time anyway). */
  private turn: Promise<unknown> = Promise.resolve();
  private nextId = 1;
  private closed = false;

  constructor(text: string, options: { timeoutMs?: number } = {}) {
    this.text = text;
    this.timeoutMs = options.timeoutMs ?? LAYOUT_LIMITS.timeout;
  }

  render(json: string): Promise<string> {
    const rendered = this.turn.then(() => this.evaluate(json));
    this.turn = rendered.catch(() => {});
    return rendered;
  }

  async close(): Promise<void> {
    this.closed = true;
    const worker = await this.worker?.catch(() => undefined);
    this.worker = undefined;
    this.fail(new LayoutError('the layout was not evaluated: the sink is stopping', 'closed'));
    await worker?.terminate();
  }

  private async evaluate(json: string): Promise<string> {
    if (this.closed) throw new LayoutError('the layout was not evaluated: the sink is stopping', 'closed');
    // The thread parses what it is given: bounded before it gets there (a batch with a large batchBytes).
    const bytes = Buffer.byteLength(json);
    if (bytes > LAYOUT_LIMITS.input) {
      throw new LayoutError(
        `the layout was not evaluated: its input is ${formatSize(bytes)} of JSON, over its limit of ${formatSize(LAYOUT_LIMITS.input)}`,
        'input',
      );
    }
    // The time limit counts from a worker ready to evaluate (not the start of a new one).
    const worker = await this.started();
    const id = this.nextId++;
    return new Promise<string>((resolve, reject) => {
      const postedAt = Date.now();
      const check = async () => {
        // Answered in time, the answer not read yet (this thread was busy): it is on its way.
        if (Atomics.load(this.finished, 0) === id) return;
        // The limit is the thread's own time: one that waited for a core (a busy machine) is not a
        // runaway. It is read from outside the thread (Node 24.6+), as the thread cannot answer while
        // it evaluates; without it, and past STARVED_LIMIT of waiting in all, the clock decides.
        const spent = await this.cpuSpentMs(worker, id);
        if (Atomics.load(this.finished, 0) === id || this.job?.id !== id) return;
        if (
          spent !== undefined &&
          spent < this.timeoutMs &&
          Date.now() - postedAt < STARVED_LIMIT * this.timeoutMs
        ) {
          timer = setTimeout(() => void check(), Math.max(10, this.timeoutMs - spent));
          return;
        }
        // Stopped, not waited for: the next evaluation gets a new worker.
        this.stop(worker);
        this.fail(
          new LayoutError(
            `the layout ran over its time limit (${formatDuration(this.timeoutMs)}) and was stopped`,
            'timeout',
          ),
        );
      };
      let timer = setTimeout(() => void check(), this.timeoutMs);
      const settle = (done: () => void) => {
        clearTimeout(timer);
        this.job = undefined;
        // Idle, it must not keep a stopping process alive.
        worker.unref();
        done();
      };
      this.job = {
        id,
        resolve: (body) => settle(() => resolve(body)),
        reject: (error) => settle(() => reject(error)),
      };
      worker.ref();
      worker.postMessage({ id, json } satisfies LayoutJob);
    });
  }

  /** The worker, once it has compiled the layout. */
  private started(): Promise<Worker> {
    if (this.worker) return this.worker;
    const started = new Promise<Worker>((resolve, reject) => {
      const start: LayoutStart = {
        text: this.text,
        finished: this.finished.buffer as SharedArrayBuffer,
        begun: this.begun.buffer as SharedArrayBuffer,
        cpuAtBegin: this.cpuAtBegin.buffer as SharedArrayBuffer,
      };
      // resourceLimits bound its V8 heap only when the process has no --max-old-space-size (which wins
      // over them: nodejs/node#43991); layout-bounds.ts bounds what an evaluation builds either way.
      const worker = new Worker(WORKER_URL, {
        workerData: start,
        resourceLimits: { maxOldGenerationSizeMb: LAYOUT_LIMITS.heapMb },
      });
      worker.once('message', (ready: LayoutReady) => {
        if (!ready.ready) {
          reject(new LayoutError(ready.error.message, ready.error.code));
          this.stop(worker);
          return;
        }
        worker.on('message', (reply: LayoutReply) => this.answer(reply));
        resolve(worker);
      });
      const failed = (message: string, code = 'worker') => {
        const failure = new LayoutError(message, code);
        reject(failure);
        // A worker stopped already (timed out, replaced) has no job of its own any more.
        if (this.worker !== started) return;
        this.worker = undefined;
        this.fail(failure);
      };
      worker.on('error', (error: Error & { code?: string }) =>
        error.code === 'ERR_WORKER_OUT_OF_MEMORY'
          ? failed(
              `the layout ran out of its thread's memory (its heap limit, ${LAYOUT_LIMITS.heapMb} MiB) and was stopped`,
              'memory',
            )
          : failed(`the layout's thread failed: ${error.message}`),
      );
      worker.on('exit', () => failed("the layout's thread stopped"));
      // Started for an evaluation, it keeps the process alive until that is over (then unref()).
    });
    this.worker = started;
    // A failed start is not kept: the next evaluation tries again.
    started.catch(() => {
      if (this.worker === started) this.worker = undefined;
    });
    return started;
  }

  /**
   * Milliseconds of CPU the worker has spent on job `id` so far: 0 when it has not begun it; undefined
   * when the thread's CPU time cannot be read (before Node 24.6, or the thread has ended).
   */
  private async cpuSpentMs(worker: Worker, id: number): Promise<number | undefined> {
    if (typeof worker.cpuUsage !== 'function') return undefined;
    try {
      const now = await worker.cpuUsage();
      if (Atomics.load(this.begun, 0) !== id) return 0;
      return (now.user + now.system) / 1000 - (this.cpuAtBegin[0] ?? 0) / 1000;
    } catch {
      return undefined;
    }
  }

  private stop(worker: Worker): void {
    this.worker = undefined;
    void worker.terminate();
  }

  private answer(reply: LayoutReply): void {
    const job = this.job;
    if (!job || job.id !== reply.id) return;
    if ('error' in reply) job.reject(new LayoutError(reply.error.message, reply.error.code));
    else job.resolve(reply.body);
  }

  private fail(error: LayoutError): void {
    this.job?.reject(error);
  }
}
