// A worker thread's test hold: the tests make a worker's work (a SQLite query, an object's rebuild) take
// as long as a slow one would, for as long as they say, by creating a file and deleting it later. The
// worker blocks on it, as slow work would block it; nothing else waits.
import { existsSync } from 'node:fs';

/** Blocks this thread while `file` exists, looking every 10 ms. */
export function holdWhileFileExists(file: string): void {
  const cell = new Int32Array(new SharedArrayBuffer(4));
  while (existsSync(file)) Atomics.wait(cell, 0, 0, 10);
}
