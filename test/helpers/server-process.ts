// A test server's process that a test can stop (cleanly or as a crash) and start again with the same
// arguments, so with the same data folder and ports, as the churn tests of the state store and of the
// Kafka sink need. Used by postgres.ts and kafka.ts.
import { rm } from 'node:fs/promises';
import { keepServerLog } from './artifacts.ts';
import { type ManagedProcess, terminate } from './processes.ts';

export interface ServerProcessOptions {
  /** The server's temp folder, removed by close(). */
  dir: string;
  /** Launches the server and resolves once it is ready (or rejects, leaving it to the caller to stop). */
  launch: () => Promise<ManagedProcess>;
  /** The signal of a clean stop (SIGTERM unless the server wants another) and how long it may take. */
  stopSignal?: NodeJS.Signals;
  graceMs: number;
}

export class ServerProcess {
  readonly #options: ServerProcessOptions;
  #current: ManagedProcess | undefined;
  #closing: Promise<void> | undefined;

  constructor(options: ServerProcessOptions) {
    this.#options = options;
  }

  /** The running (or last) process's id; -1 before the first start. */
  get pid(): number {
    return this.#current?.pid ?? -1;
  }

  /** Starts the server unless it runs; resolves once it is ready. */
  async start(): Promise<void> {
    if (this.#current && !this.#current.exit) return;
    this.#current = undefined;
    this.#current = await this.#options.launch();
  }

  /** Stops the server, cleanly or (`crash`) with SIGKILL; its folder stays for the next start(). */
  async stop(options: { crash?: boolean } = {}): Promise<void> {
    if (!this.#current) return;
    await terminate(this.#current, {
      signal: options.crash ? 'SIGKILL' : (this.#options.stopSignal ?? 'SIGTERM'),
      graceMs: this.#options.graceMs,
    });
  }

  /** Stops the server for good, copies its log to the test artefacts (`keepLog`), removes its folder. */
  close(keepLog?: { logFile: string; label: string }): Promise<void> {
    this.#closing ??= (async () => {
      await this.stop();
      if (keepLog) await keepServerLog(keepLog.logFile, keepLog.label);
      await rm(this.#options.dir, { recursive: true, force: true });
    })();
    return this.#closing;
  }
}
