import type { ChangeEvent } from '../diff/types.ts';

/** Where events go. A sink never throws into the watch: it handles its own failures. */
export interface Sink {
  readonly name: string;
  deliver(event: ChangeEvent): void;
  /** Delivers what is in flight (within the timeout) and releases everything it holds. */
  close(timeoutMs: number): Promise<void>;
}
