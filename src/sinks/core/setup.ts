// From sink specs (the flags' and the config file's `sinks:`, src/config/) to running sinks behind a router:
// each created by its type's component (src/sinks/registry.ts); the dead-letter files of those that deliver
// opened once per path, and the backpressure of the sinks that have it handed to the watch.

import { compileFilter } from '../../events/filter.ts';
import type { Credentials } from '../../util/credentials.ts';
import type { SinkRuntime } from '../component.ts';
import { type RegisteredSpec, sinkComponent, sinkDelivers } from '../registry.ts';
import { DeadLetterFile } from './dead-letter.ts';
import { type Route, Router } from './router.ts';
import { allSinkCredentials, sinkCredentials } from './sink-credentials.ts';
import { defaultSinkName } from './sink-name.ts';
import { checkFilesNotShared, type WrittenFile } from './written-files.ts';

export type SinkSpec = RegisteredSpec;

export interface SinkSet {
  router: Router;
  /** Open dead-letter files; close them after the router. */
  deadLetterFiles: DeadLetterFile[];
  /** Pauses the watch while a sink that neither queues nor drops lags (Sink.flowControl: stdout's reader). */
  flowControl: () => Promise<void> | undefined;
}

/**
 * Creates the sinks and the router. Throws a UsageError when a dead-letter file cannot be opened. Each
 * sink's module is imported by its factory, so that undici, the Kafka client and the OpenTelemetry
 * packages are loaded only when there is such a sink.
 */
export async function createSinks(specs: readonly SinkSpec[], runtime: SinkRuntime): Promise<SinkSet> {
  const deadLetters = new Map<string, DeadLetterFile>();
  // Names (in logs, metrics, /readyz) and dead letters are scrubbed of every sink's credentials.
  const credentials = allSinkCredentials(specs);
  const numbered = uniqueNames();
  const unique = (name: string) => numbered(credentials.scrub(name));
  const routes: Route[] = [];
  checkFilesNotShared(writtenFiles(specs, runtime.deadLetterFile));
  try {
    for (const spec of specs) {
      const deadLetter = openDeadLetter(
        deadLetters,
        deadLetterPath(spec, runtime.deadLetterFile),
        runtime,
        credentials,
      );
      const sink = await sinkComponent(spec.type)!.create(spec, {
        runtime,
        unique,
        deadLetter,
        credentials: sinkCredentials(spec),
      });
      routes.push({ sink, ...(spec.filter ? { filter: compileFilter(spec.filter) } : {}) });
    }
  } catch (error) {
    // A later dead-letter file failed to open: release what was created.
    for (const route of routes) void route.sink.close(0);
    for (const file of deadLetters.values()) file.close();
    throw error;
  }

  // The watch honours the backpressure of the sinks that have it (Sink.flowControl): the first that lags.
  const paced = routes.flatMap(({ sink }) => (sink.flowControl ? [sink] : []));
  return {
    router: new Router(routes, runtime.log, runtime.failures ? { failures: runtime.failures } : {}),
    deadLetterFiles: [...deadLetters.values()],
    flowControl: () => {
      for (const sink of paced) {
        const pause = sink.flowControl?.();
        if (pause) return pause;
      }
      return undefined;
    },
  };
}

/** The files the sinks write, and the dead-letter files (one per path: sinks share those by design). */
function writtenFiles(specs: readonly SinkSpec[], defaultDeadLetter: string | undefined): WrittenFile[] {
  const files: WrittenFile[] = [];
  const deadLetters = new Set<string>();
  for (const spec of specs) {
    const component = sinkComponent(spec.type);
    const name = spec.name ?? defaultSinkName(spec);
    for (const file of component?.files?.(spec) ?? []) files.push({ path: file, writer: `the sink ${name}` });
    const deadLetter = deadLetterPath(spec, defaultDeadLetter);
    if (deadLetter !== undefined) deadLetters.add(deadLetter);
  }
  for (const file of deadLetters) files.push({ path: file, writer: `the dead-letter file ${file}` });
  return files;
}

/** A sink's dead-letter file: its own, else the watch's; none for a type that does not deliver. */
function deadLetterPath(spec: SinkSpec, watchFile: string | undefined): string | undefined {
  if (!sinkDelivers(spec.type)) return undefined;
  return ('deadLetterFile' in spec ? spec.deadLetterFile : undefined) ?? watchFile;
}

/** One DeadLetterFile per path, however many sinks write to it. */
function openDeadLetter(
  files: Map<string, DeadLetterFile>,
  path: string | undefined,
  runtime: SinkRuntime,
  credentials: Credentials,
): DeadLetterFile | undefined {
  if (path === undefined) return undefined;
  let file = files.get(path);
  if (!file) {
    file = DeadLetterFile.open(path, runtime.log, runtime.deadLetterLimits, credentials);
    files.set(path, file);
  }
  return file;
}

/** Two sinks with one name would share a line in logs and metrics: the second is "name #2". */
function uniqueNames(): (name: string) => string {
  const names = new Map<string, number>();
  return (name) => {
    const seen = (names.get(name) ?? 0) + 1;
    names.set(name, seen);
    return seen === 1 ? name : `${name} #${seen}`;
  };
}
