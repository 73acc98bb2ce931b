// Creates a file sink from its spec (config.ts) and what every delivering sink is given: its unique
// name, its dead-letter file, the metrics' observer, its log.
import type { DeliveryOptions } from '../delivery.ts';
import type { Sink } from '../sink.ts';
import { type FileSinkSpec, fileSinkName } from './config.ts';

/** What the sink set hands a delivering sink besides its spec. */
export interface FileSinkContext {
  unique: (name: string) => string;
  delivery: Omit<DeliveryOptions, 'name' | 'timeoutMs' | 'credentials'>;
}

/** Opens the file (a UsageError, exit 2, names what is wrong with its path) and starts the sink. */
export async function createFileSink(spec: FileSinkSpec, context: FileSinkContext): Promise<Sink> {
  const { FileSink } = await import('./file-sink.ts');
  return FileSink.create({
    ...context.delivery,
    name: context.unique(spec.name ?? fileSinkName(spec)),
    path: spec.path,
    maxSize: spec.maxSize,
    maxFiles: spec.maxFiles,
    compress: spec.compress,
    fsync: spec.fsync,
    fsyncIntervalMs: spec.fsyncIntervalMs,
    mode: spec.mode,
    queue: spec.queue,
  });
}
