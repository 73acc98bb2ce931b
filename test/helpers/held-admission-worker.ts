// The admission thread's worker (src/who/admission/admission-worker.ts) as a test runs it: before each review,
// it waits while the file `hold` exists (the review is being read, for as long as the test says), and
// stops, as a worker out of memory would, while the file `stopWhile` exists. Given as the thread's
// workerUrl (HELD_ADMISSION_WORKER), with the files in its start.
import { existsSync } from 'node:fs';
import { parentPort, workerData } from 'node:worker_threads';
import { type AdmissionWorkerStart, serveAdmission } from '../../src/who/admission/admission-worker.ts';
import { holdWhileFileExists } from './worker-hold.ts';

export const HELD_ADMISSION_WORKER = new URL(import.meta.url);

/** The start of a held worker: the thread's own, and the files. */
export interface HeldStart extends AdmissionWorkerStart {
  hold?: string;
  stopWhile?: string;
}

if (import.meta.main && parentPort) {
  const start = workerData as HeldStart;
  serveAdmission(parentPort, start, () => {
    if (start.hold) holdWhileFileExists(start.hold);
    if (start.stopWhile && existsSync(start.stopWhile)) process.exit(1);
  });
}
