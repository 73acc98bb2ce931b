// Startup progress on a terminal's stderr: resource types synced / total and
// objects so far, rewritten in place. Silent when stderr is not a terminal.
import type { Informer } from '../informer/informer.ts';

export class SyncProgress {
  private readonly stream: NodeJS.WriteStream;
  private readonly enabled: boolean;
  private timer: NodeJS.Timeout | undefined;
  private informers: () => Informer[] = () => [];

  constructor(stream: NodeJS.WriteStream) {
    this.stream = stream;
    this.enabled = stream.isTTY === true;
  }

  start(informers: () => Informer[]): void {
    this.informers = informers;
    if (!this.enabled) return;
    this.timer = setInterval(() => this.draw(), 200);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    if (this.enabled) this.stream.write('\r\x1b[K');
  }

  private draw(): void {
    const all = this.informers();
    const synced = all.filter((informer) => informer.hasSynced).length;
    const objects = all.reduce((sum, informer) => sum + informer.objectCount, 0);
    this.stream.write(
      `\r\x1b[Ksyncing: ${synced}/${all.length} resource types, ${objects.toLocaleString('en')} objects`,
    );
  }
}
