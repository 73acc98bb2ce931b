// Startup progress on a terminal's stderr: resource types synced / total and objects so far, rewritten
// in place; with several clusters, one such part per cluster still syncing. Silent when stderr is not a
// terminal.
import type { Informer } from '../informer/informer.ts';
import { groupedCount } from '../util/count-text.ts';
import type { Logger } from '../util/log.ts';

/** One cluster's sync as the progress line shows it. */
export interface ClusterProgress {
  /** Its name (its events' cluster); undefined for the only cluster (the line then names none). */
  name: string | undefined;
  informers: Informer[];
}

export class SyncProgress {
  private readonly stream: NodeJS.WriteStream;
  private readonly enabled: boolean;
  private timer: NodeJS.Timeout | undefined;
  /** The progress line is on the terminal now (drawn, not cleared since). */
  private shown = false;
  private clusters: () => readonly ClusterProgress[] = () => [];

  constructor(stream: NodeJS.WriteStream) {
    this.stream = stream;
    this.enabled = stream.isTTY === true;
  }

  start(clusters: () => readonly ClusterProgress[]): void {
    this.clusters = clusters;
    if (!this.enabled) return;
    this.timer = setInterval(() => this.draw(), 200);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    this.clear();
  }

  /**
   * `log`, writing its lines where the progress line was (cleared first) rather than after it; the
   * progress is drawn again at its next tick.
   */
  logger(log: Logger): Logger {
    return {
      info: (message, fields) => {
        this.clear();
        log.info(message, fields);
      },
      warn: (message, fields) => {
        this.clear();
        log.warn(message, fields);
      },
      debug: (message, fields) => {
        this.clear();
        log.debug(message, fields);
      },
    };
  }

  private clear(): void {
    if (!this.shown) return;
    this.shown = false;
    this.stream.write('\r\x1b[K');
  }

  private draw(): void {
    const line = `syncing: ${this.clusters().map(describe).join(' · ')}`;
    // A line longer than the terminal wraps, and \r would then rewrite only its last row.
    const width = this.stream.columns > 1 ? this.stream.columns - 1 : line.length;
    this.stream.write(`\r\x1b[K${line.length > width ? `${line.slice(0, width - 1)}…` : line}`);
    this.shown = true;
  }
}

/** "3/40 resource types, 1,234 objects", after the cluster's name when there are several. */
function describe(cluster: ClusterProgress): string {
  const name = cluster.name === undefined ? '' : `${cluster.name}: `;
  const { informers } = cluster;
  if (informers.length === 0) return `${name}discovering resource types`;
  const synced = informers.filter((informer) => informer.hasSynced).length;
  const objects = informers.reduce((sum, informer) => sum + informer.objectCount, 0);
  return `${name}${synced}/${informers.length} resource types, ${groupedCount(objects)} objects`;
}
