// Holds a kubediff worker thread's requests for as long as a test says, as slow work (a scan of a large
// history, a large object's rebuild) would hold them. Loaded with --import into every thread of a
// process (`workerHoldEnv` for a kubediff child; npm test loads it into the test processes), it does
// nothing unless KUBEDIFF_TEST_WORKER_HOLD names a worker module and a file
// (`object-view-worker=/tmp/hold`): in a worker thread started from that module, each request waits
// before it is handled while the file exists. The product has no hook of its own for it.
import { existsSync } from 'node:fs';
import { registerHooks } from 'node:module';
import { fileURLToPath } from 'node:url';
import { isMainThread, parentPort } from 'node:worker_threads';

const VARIABLE = 'KUBEDIFF_TEST_WORKER_HOLD';
const LOADED = Symbol.for('kubediff.test.worker-hold');

/** The environment that makes a kubediff child hold requests in `worker` while `file` exists. */
export function workerHoldEnv(worker: WorkerModule, file: string): Record<string, string> {
  return {
    NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --import=${fileURLToPath(import.meta.url)}`.trim(),
    [VARIABLE]: `${worker}=${file}`,
  };
}

export type WorkerModule = 'sqlite-timeline-worker' | 'object-view-worker';

/**
 * Makes workers started from now on in this process hold (this process must have loaded this module
 * with --import: npm test does); returns the undo.
 */
export function holdWorkersHere(worker: WorkerModule, file: string): () => void {
  if (!(globalThis as Record<symbol, unknown>)[LOADED]) {
    throw new Error('test/helpers/worker-hold.ts is not loaded with --import: run the test with npm test');
  }
  process.env[VARIABLE] = `${worker}=${file}`;
  return () => {
    delete process.env[VARIABLE];
  };
}

export function holdWhileFileExists(file: string): void {
  const cell = new Int32Array(new SharedArrayBuffer(4));
  while (existsSync(file)) Atomics.wait(cell, 0, 0, 10);
}

function install(): void {
  (globalThis as Record<symbol, unknown>)[LOADED] = true;
  const setting = process.env[VARIABLE];
  if (isMainThread || !parentPort || !setting) return;
  const [worker, file] = setting.split('=', 2) as [string, string];
  const port = parentPort;
  let held = false;
  // The thread's entry module is resolved after this one: it says which worker this thread is.
  registerHooks({
    resolve(specifier, context, next) {
      const resolved = next(specifier, context);
      if (new RegExp(`/${worker}\\.[jt]s$`).test(resolved.url)) held = true;
      return resolved;
    },
  });
  const on = port.on.bind(port);
  port.on = ((event: string, listener: (...args: unknown[]) => void) =>
    on(event, (...args: unknown[]) => {
      if (event === 'message' && held) holdWhileFileExists(file);
      return listener(...args);
    })) as typeof port.on;
}

install();
