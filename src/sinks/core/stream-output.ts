// Writes events to a stream (stdout), one rendering per event. Bounded: once pauseAtBytes wait unwritten
// (a slow reader of a pipe), flowControl() makes the informers stop reading until stdout drains, so TCP
// pushes back on the API server and nothing is lost (a watch the server gives up is resumed or relisted).
// A reader that goes away (EPIPE) calls onClosed, so the command stops cleanly.
import type { Writable } from 'node:stream';
import type { ChangeEvent, KubediffEvent, OutcomeEvent } from '../../events/event.ts';
import { eventJson } from '../../events/event-json.ts';
import type { Story, StoryBuilder, StoryOptions, StoryStats } from '../../events/story.ts';
import { errorMessage } from '../../util/errors.ts';
import type { Logger } from '../../util/log.ts';
import { emptyStats, type Sink, type SinkReport, type SinkStats } from './sink.ts';
import { sinkStoryBuilder } from './story-builder.ts';

/** Above this much unwritten output, the watch pauses. */
const DEFAULT_PAUSE_AT_BYTES = 1024 * 1024;

export class StreamOutput implements Sink {
  readonly name: string;
  private readonly stream: Writable;
  private readonly render: (event: KubediffEvent) => string;
  private readonly pauseAtBytes: number;
  private readonly log: Logger | undefined;
  private readonly counters: SinkStats = emptyStats();
  private closed = false;
  private room: Promise<void> | undefined;
  private pauses = 0;
  private readonly stories: StoryBuilder | undefined;

  constructor(options: {
    name: string;
    stream: Writable;
    render: (event: KubediffEvent) => string;
    /** The stream failed or its reader went away (EPIPE); nothing more is written. */
    onClosed?: (error: NodeJS.ErrnoException) => void;
    pauseAtBytes?: number;
    log?: Logger;
    /** --stories: write stories (rendered so) instead of events (docs/stories.md). */
    stories?: { options: Partial<StoryOptions>; render: (story: Story) => string; log: Logger };
  }) {
    this.name = options.name;
    this.stream = options.stream;
    this.render = options.render;
    this.pauseAtBytes = options.pauseAtBytes ?? DEFAULT_PAUSE_AT_BYTES;
    this.log = options.log;
    const stories = options.stories;
    this.stories = stories
      ? sinkStoryBuilder(this.name, stories.options, stories.log, (story) => {
          try {
            this.write(story.events.length, () => stories.render(story));
          } catch (error) {
            // Counted lost by write(); a story closes on a timer, where nothing else would report it.
            stories.log.warn(`${this.name}: a story could not be written: ${errorMessage(error)}`);
          }
        })
      : undefined;
    // With stories, OUTCOMEs are not written (a story tells changes; docs/outcomes.md).
    this.deliverOutcome = stories ? undefined : (event) => this.deliverOne(event);
    this.stream.on('error', (error: NodeJS.ErrnoException) => {
      if (this.closed) return;
      this.closed = true;
      options.onClosed?.(error);
    });
  }

  deliver(event: ChangeEvent): void {
    if (this.stories) {
      this.counters.accepted++;
      this.stories.add(event);
      return;
    }
    this.deliverOne(event);
  }

  readonly deliverOutcome: ((event: OutcomeEvent) => void) | undefined;

  private deliverOne(event: KubediffEvent): void {
    this.counters.accepted++;
    this.write(1, () => this.render(event));
  }

  /** Writes what `render` makes of `count` events (one event, or a story). */
  private write(count: number, render: () => string): void {
    if (this.closed || this.stream.destroyed) {
      this.counters.lost += count;
      return;
    }
    let text: string;
    try {
      text = render();
    } catch (error) {
      // Accounted for; the router reports it (src/util/event-failures.ts).
      this.counters.lost += count;
      throw error;
    }
    this.counters.pending += count;
    this.stream.write(text, (error) => {
      this.counters.pending -= count;
      if (error) this.counters.lost += count;
      else this.counters.delivered += count;
    });
  }

  /**
   * Undefined while the reader keeps up; otherwise a promise that resolves once the output has drained (or
   * the stream is gone). Informers await it before reading more from the API server.
   */
  flowControl(): Promise<void> | undefined {
    if (this.room) return this.room;
    if (this.closed || this.stream.destroyed || this.stream.writableLength < this.pauseAtBytes)
      return undefined;
    this.pauses++;
    this.log?.debug(
      `${this.name} is not keeping up (${Math.round(this.stream.writableLength / 1024)} KiB unwritten): pausing the watch until it drains (pause ${this.pauses}).`,
    );
    this.room = new Promise<void>((resolve) => {
      const done = () => {
        this.stream.off('drain', done);
        this.stream.off('close', done);
        this.stream.off('error', done);
        this.room = undefined;
        resolve();
      };
      this.stream.on('drain', done);
      this.stream.on('close', done);
      this.stream.on('error', done);
    });
    return this.room;
  }

  stats(): SinkStats {
    return { ...this.counters, pending: this.counters.pending + (this.stories?.pendingEvents ?? 0) };
  }

  storyStats(): StoryStats | undefined {
    return this.stories?.stats();
  }

  async close(timeoutMs: number): Promise<SinkReport> {
    this.stories?.flush();
    if (!this.closed && this.stream.writableLength > 0) {
      await new Promise<void>((resolve) => {
        const done = () => {
          clearTimeout(timer);
          this.stream.off('drain', done);
          this.stream.off('close', done);
          resolve();
        };
        const timer = setTimeout(done, timeoutMs);
        this.stream.on('drain', done);
        this.stream.on('close', done);
      });
    }
    return { name: this.name, stats: this.stats() };
  }
}

/** The contract: one JSON object per line. */
export function renderJsonLine(event: KubediffEvent): string {
  return `${eventJson(event)}\n`;
}
