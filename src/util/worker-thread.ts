// A worker thread that answers requests, for work that must not run on the thread that watches and
// serves (a runaway layout, a synchronous SQLite query, a large object's rebuild): WorkerThread is the
// caller's side, serveRequests() the worker's. The worker starts on the first request, and again after
// it crashed, stopped, refused to start or ran over its time limit; a crash fails only the requests it
// held. With a time limit, requests run one at a time, each timed from a ready worker (or by the thread's
// CPU time on it: cpuTime), and the worker is terminated past it. With a pending limit (the caller's, documented and counted there), a request beyond
// it is refused at once. close() fails what waits. Each failure reaches the caller as its `error` makes it.
import {
  isMainThread,
  parentPort,
  type ResourceLimits,
  type Transferable,
  Worker,
  workerData,
} from 'node:worker_threads';

/** Why a request was not answered; `E` is the worker's own description of an error. */
export type WorkerFailure<E> =
  | { kind: 'refused'; error: E }
  | { kind: 'failed'; error: E }
  | { kind: 'crashed'; message: string; code?: string | undefined }
  | { kind: 'stopped' }
  | { kind: 'timeout'; limitMs: number }
  | { kind: 'closed' };

/** Admits requests up to a bound and refuses beyond it (src/state/query-gate.ts). */
export interface PendingLimit {
  run<T>(work: () => Promise<T>): Promise<T>;
}

export interface WorkerThreadOptions<Start, E> {
  /** The worker's module (it calls serveRequests()). */
  url: URL;
  /** What the worker's setup is given. */
  start: Start;
  /** The error a caller sees for each failure. */
  error: (failure: WorkerFailure<E>) => Error;
  /** Past this, a request's worker is terminated; requests then run one at a time. */
  timeLimitMs?: number | undefined;
  /**
   * The time limit counts the worker thread's CPU time on the request (Node 24.6+; the clock before), so
   * that one waiting for a core on a busy machine is not taken for a runaway; past `starvedAfterMs` of
   * waiting in all, the clock decides.
   */
  cpuTime?: { starvedAfterMs: number } | undefined;
  /** The worker's V8 heap bounds (a process's --max-old-space-size wins over them: nodejs/node#43991). */
  resourceLimits?: ResourceLimits | undefined;
  /** Pending requests (waiting, being prepared or answered); none when absent. */
  limit?: PendingLimit | undefined;
  /** Whether the worker keeps the process alive: always, only while it answers, or never. */
  keepAlive: 'always' | 'busy' | 'never';
}

type Ready<E> = { ready: true } | { ready: false; error: E };
type Reply<R, E> = { id: number; result: R } | { id: number; error: E };
interface Request<J> {
  id: number;
  job: J;
}
interface WorkerStart<S> {
  start: S;
  /** One Int32: the id of the last request whose answer is posted. */
  finished: SharedArrayBuffer;
  /** One Int32: the id of the last request begun; one Float64: the thread's CPU time then (µs). */
  begun: SharedArrayBuffer;
  cpuAtBegin: SharedArrayBuffer;
}
interface Pending<R> {
  resolve: (result: R) => void;
  reject: (error: Error) => void;
}

export class WorkerThread<Start, Job, Result, E> {
  private readonly options: WorkerThreadOptions<Start, E>;
  /** Written by the worker before it posts an answer: tells an answer on its way from a runaway. */
  private readonly finished = new Int32Array(new SharedArrayBuffer(4));
  /** Written by the worker as it begins a request: which, and its thread's CPU time then. */
  private readonly begun = new Int32Array(new SharedArrayBuffer(4));
  private readonly cpuAtBegin = new Float64Array(new SharedArrayBuffer(8));
  private readonly pending = new Map<number, Pending<Result>>();
  private worker: Promise<Worker> | undefined;
  /** Timed requests wait here, in order, while one runs. */
  private turn: Promise<unknown> = Promise.resolve();
  private nextId = 1;
  private closed = false;

  constructor(options: WorkerThreadOptions<Start, E>) {
    this.options = options;
  }

  /** Starts the worker now; rejects with the error of its refusal or crash. */
  async ready(): Promise<void> {
    await this.started();
  }

  /**
   * The worker's answer to `job`. A function is called inside the pending limit, so that a refused
   * request prepares nothing (a read that would bring megabytes onto this thread).
   */
  request(job: Job | (() => Promise<Job>)): Promise<Result> {
    if (this.closed) return Promise.reject(this.options.error({ kind: 'closed' }));
    const run = async (): Promise<Result> => {
      const prepared = typeof job === 'function' ? await (job as () => Promise<Job>)() : job;
      if (this.options.timeLimitMs === undefined) return this.send(prepared);
      const answered = this.turn.then(() => this.send(prepared));
      this.turn = answered.catch(() => {});
      return answered;
    };
    return this.options.limit ? this.options.limit.run(run) : run();
  }

  async close(): Promise<void> {
    this.closed = true;
    const worker = await this.worker?.catch(() => undefined);
    this.worker = undefined;
    this.failAll(this.options.error({ kind: 'closed' }));
    await worker?.terminate();
  }

  private async send(job: Job): Promise<Result> {
    if (this.closed) throw this.options.error({ kind: 'closed' });
    const worker = await this.started();
    const id = this.nextId++;
    const { timeLimitMs, keepAlive } = this.options;
    return new Promise<Result>((resolve, reject) => {
      const postedAt = Date.now();
      let timer: NodeJS.Timeout | undefined;
      const check = async (limitMs: number) => {
        // Answered in time, the answer not read yet (this thread was busy): it is on its way.
        if (Atomics.load(this.finished, 0) === id) return;
        const cpuTime = this.options.cpuTime;
        if (cpuTime) {
          // Read from outside the thread, which cannot answer while it works.
          const spent = await this.cpuSpentMs(worker, id);
          if (Atomics.load(this.finished, 0) === id || !this.pending.has(id)) return;
          if (spent !== undefined && spent < limitMs && Date.now() - postedAt < cpuTime.starvedAfterMs) {
            timer = setTimeout(() => void check(limitMs), Math.max(10, limitMs - spent));
            return;
          }
        }
        this.stop(worker);
        this.failAll(this.options.error({ kind: 'timeout', limitMs }));
      };
      if (timeLimitMs !== undefined) timer = setTimeout(() => void check(timeLimitMs), timeLimitMs);
      const settle = () => {
        clearTimeout(timer);
        this.pending.delete(id);
        if (keepAlive === 'busy' && this.pending.size === 0) worker.unref();
      };
      this.pending.set(id, {
        resolve: (result) => {
          settle();
          resolve(result);
        },
        reject: (error) => {
          settle();
          reject(error);
        },
      });
      if (keepAlive === 'busy') worker.ref();
      worker.postMessage({ id, job } satisfies Request<Job>);
    });
  }

  /** The worker, once it has set up and says it is ready. */
  private started(): Promise<Worker> {
    if (this.worker) return this.worker;
    const started = new Promise<Worker>((resolve, reject) => {
      const start: WorkerStart<Start> = {
        start: this.options.start,
        finished: this.finished.buffer as SharedArrayBuffer,
        begun: this.begun.buffer as SharedArrayBuffer,
        cpuAtBegin: this.cpuAtBegin.buffer as SharedArrayBuffer,
      };
      const worker = new Worker(this.options.url, {
        workerData: start,
        ...(this.options.resourceLimits ? { resourceLimits: this.options.resourceLimits } : {}),
      });
      worker.once('message', (ready: Ready<E>) => {
        if (!ready.ready) {
          reject(this.options.error({ kind: 'refused', error: ready.error }));
          this.stop(worker);
          return;
        }
        worker.on('message', (reply: Reply<Result, E>) => this.answer(reply));
        resolve(worker);
      });
      const failed = (failure: WorkerFailure<E>) => {
        const error = this.options.error(failure);
        reject(error);
        // A worker stopped already (timed out, replaced) has no requests of its own any more.
        if (this.worker !== started) return;
        this.worker = undefined;
        this.failAll(error);
      };
      worker.on('error', (error: Error & { code?: string }) =>
        failed({ kind: 'crashed', message: error.message, code: error.code }),
      );
      worker.on('exit', () => failed({ kind: 'stopped' }));
      if (this.options.keepAlive === 'never') worker.unref();
    });
    this.worker = started;
    // A failed start is not kept: the next request tries again.
    started.catch(() => {
      if (this.worker === started) this.worker = undefined;
    });
    return started;
  }

  /**
   * Milliseconds of CPU the worker has spent on request `id` so far: 0 when it has not begun it;
   * undefined when the thread's CPU time cannot be read (before Node 24.6, or the thread has ended).
   */
  private async cpuSpentMs(worker: Worker, id: number): Promise<number | undefined> {
    if (typeof worker.cpuUsage !== 'function') return undefined;
    try {
      const now = await worker.cpuUsage();
      if (Atomics.load(this.begun, 0) !== id) return 0;
      return (now.user + now.system - (this.cpuAtBegin[0] ?? 0)) / 1000;
    } catch {
      return undefined;
    }
  }

  private stop(worker: Worker): void {
    this.worker = undefined;
    void worker.terminate();
  }

  private answer(reply: Reply<Result, E>): void {
    const pending = this.pending.get(reply.id);
    if (!pending) return;
    if ('error' in reply) pending.reject(this.options.error({ kind: 'failed', error: reply.error }));
    else pending.resolve(reply.result);
  }

  private failAll(error: Error): void {
    for (const pending of [...this.pending.values()]) pending.reject(error);
  }
}

/** What a worker does with its requests, made by the setup from its start data. */
export interface WorkerService<Job, Result> {
  handle: (job: Job) => Result | Promise<Result>;
  /** Buffers of a result to move rather than copy (they become unusable here). */
  transfer?: (result: Result) => Transferable[];
  /** When the caller's side goes away. */
  close?: () => void;
}

/**
 * In a worker thread that WorkerThread started: sets up (an exception is a refusal, described by
 * `describe`), says it is ready, then answers each request in order. Elsewhere it does nothing, so a
 * worker's module may be imported for its types.
 */
export async function serveRequests<Start, Job, Result, E>(
  setup: (start: Start) => WorkerService<Job, Result> | Promise<WorkerService<Job, Result>>,
  describe: (error: unknown) => E,
): Promise<void> {
  const port = parentPort;
  if (!port || isMainThread) return;
  const data = workerData as WorkerStart<Start>;
  const finished = new Int32Array(data.finished);
  const begun = new Int32Array(data.begun);
  const cpuAtBegin = new Float64Array(data.cpuAtBegin);
  let service: WorkerService<Job, Result>;
  try {
    service = await setup(data.start);
  } catch (error) {
    port.postMessage({ ready: false, error: describe(error) } satisfies Ready<E>);
    return;
  }
  port.postMessage({ ready: true } satisfies Ready<E>);
  port.on('message', async ({ id, job }: Request<Job>) => {
    // For a time limit that counts this thread's CPU time (WorkerThreadOptions.cpuTime).
    const cpu = process.threadCpuUsage?.();
    if (cpu) cpuAtBegin[0] = cpu.user + cpu.system;
    Atomics.store(begun, 0, id);
    let reply: Reply<Result, E>;
    let transfer: Transferable[] = [];
    try {
      const result = await service.handle(job);
      reply = { id, result };
      transfer = service.transfer?.(result) ?? [];
    } catch (error) {
      reply = { id, error: describe(error) };
    }
    Atomics.store(finished, 0, id);
    port.postMessage(reply, transfer);
  });
  port.on('close', () => service.close?.());
}
