// The file sink type as src/sinks/registry.ts lists it (src/sinks/component.ts): its settings from
// config.ts, and a factory that imports the implementation (file-sink.ts) only when a file sink is created.
import type { SinkComponent } from '../component.ts';
import { deliveryOptions } from '../core/sink-options.ts';
import {
  type FileSinkEntry,
  type FileSinkSpec,
  fileSinkChecks,
  fileSinkFlags,
  fileSinkFormats,
  fileSinkSchema,
  fileSpecOf,
  fileSpecsFromFlags,
} from './config.ts';

export const fileComponent: SinkComponent<FileSinkEntry, FileSinkSpec> = {
  types: ['file'],
  schemas: { file: fileSinkSchema },
  formats: fileSinkFormats,
  checks: fileSinkChecks,
  flags: fileSinkFlags,
  fromFlags: fileSpecsFromFlags,
  spec: fileSpecOf,
  // A path holds no credential.
  name: (spec) => `file ${spec.path}`,
  credentials: () => [],
  files: (spec) => [spec.path],
  storiesRefused: () =>
    'stories do not apply to a file sink: it writes one event per line, as -o json does (remove its stories key).',
  async create(spec, context) {
    const { FileSink } = await import('./file-sink.ts');
    return FileSink.create({
      ...deliveryOptions(spec, context),
      name: context.unique(spec.name ?? this.name(spec)),
      log: context.runtime.log,
      path: spec.path,
      maxSize: spec.maxSize,
      maxFiles: spec.maxFiles,
      compress: spec.compress,
      fsync: spec.fsync,
      fsyncIntervalMs: spec.fsyncIntervalMs,
      mode: spec.mode,
      queue: spec.queue,
    });
  },
  docs: 'docs/sinks.md#file',
};
