// A load on the admission webhook (test/helpers/admission-load.ts) run in a thread of its own, so that
// the bench's probes are not slowed by the load's own work (encrypting 7.5 MB bodies, say). Started with
// the load's options; it says when it is ready (a large review's body built), a message stops it, and it
// answers with what the listener answered, by status.
import { parentPort, workerData } from 'node:worker_threads';
import { type Load, largeReviews, slowBodies } from '../../test/helpers/admission-load.ts';

export type LoadStart =
  | {
      kind: 'slow-bodies';
      port: number;
      ca: string;
      addresses: string[];
      perAddress: number;
      cycleMs: number;
    }
  | { kind: 'large-reviews'; url: string; ca: string; clients: number; keys: number };

const start = workerData as LoadStart;
const load: Load = start.kind === 'slow-bodies' ? slowBodies(start) : largeReviews(start);
parentPort?.postMessage('ready');
parentPort?.once('message', async () => {
  await load.stop();
  parentPort?.postMessage({ statuses: Object.fromEntries(load.statuses), connections: load.connections });
});
