// A history reader that refuses a query because its queue of waiting queries is full (the SQLite
// reader's worker thread, sqlite-timeline-worker.ts): the UI answers 503 and counts it.
import { KubediffError } from '../util/errors.ts';

export class ReaderBusy extends KubediffError {}
