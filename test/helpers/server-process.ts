// A test server's process that a test can stop (cleanly or as a crash) and start again with the same
// arguments, so with the same data folder and ports, as the churn tests of the state store and of the
// Kafka sink need. Used by postgres.ts and kafka.ts.
import { rm } from 'node:fs/promises';
import { keepServerLog } from './artifacts.ts';
import { type ManagedProcess, type ServerFiles, type ServerOptions, terminate } from './processes.ts';

/** What a test does with a server it started itself (startPostgres(), startKafka()). */
export interface RestartableServer {
  /** Stops the server (its clean stop; `crash`: SIGKILL), keeping its data folder and ports. */
  stopServer(options?: { crash?: boolean }): Promise<void>;
  /** Starts it again with the same data and ports; resolves once it is ready. */
  startServer(): Promise<void>;
  /** Stops the server for good, keeps its log (ServerOptions.keepLog) and removes its folder. Idempotent. */
  stop(): Promise<void>;
}

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

  /**
   * `info` with the controls of a RestartableServer; its `pid` follows the restarts. The log is kept
   * as `options.label` (default `defaultLabel`) unless options.keepLog is false.
   */
  controls<T extends ServerFiles & { logFile: string }>(
    info: T,
    options: Pick<ServerOptions, 'keepLog' | 'label'>,
    defaultLabel: string,
  ): T & RestartableServer {
    const keepLog =
      options.keepLog === false ? undefined : { logFile: info.logFile, label: options.label ?? defaultLabel };
    const running: T & RestartableServer = {
      ...info,
      stopServer: (stopOptions) => this.stop(stopOptions),
      startServer: async () => {
        await this.start();
        running.pid = this.pid;
      },
      stop: () => this.close(keepLog),
    };
    return running;
  }
}
