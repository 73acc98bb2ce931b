// Writes events to a stream (stdout), one rendering per event. When the
// reader is slower than the cluster, events wait in Node's stream buffer;
// when the reader goes away (EPIPE: `kubediff watch | head`), onClosed lets
// the command stop cleanly instead of crashing.
import type { Writable } from 'node:stream';
import type { ChangeEvent } from '../diff/types.ts';
import type { Sink } from './sink.ts';

export class StreamOutput implements Sink {
  readonly name: string;
  private readonly stream: Writable;
  private readonly render: (event: ChangeEvent) => string;
  private closed = false;

  constructor(options: {
    name: string;
    stream: Writable;
    render: (event: ChangeEvent) => string;
    /** The stream failed or its reader went away (EPIPE); nothing more is written. */
    onClosed?: (error: NodeJS.ErrnoException) => void;
  }) {
    this.name = options.name;
    this.stream = options.stream;
    this.render = options.render;
    this.stream.on('error', (error: NodeJS.ErrnoException) => {
      if (this.closed) return;
      this.closed = true;
      options.onClosed?.(error);
    });
  }

  deliver(event: ChangeEvent): void {
    if (this.closed) return;
    this.stream.write(this.render(event));
  }

  close(timeoutMs: number): Promise<void> {
    if (this.closed || this.stream.writableLength === 0) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, timeoutMs);
      this.stream.once('drain', () => {
        clearTimeout(timer);
        resolve();
      });
    });
  }
}

/** The contract: one JSON object per line. */
export function renderJsonLine(event: ChangeEvent): string {
  return `${JSON.stringify(event)}\n`;
}
