// What a sink type's factory takes from its spec and the runtime alike: its timeout and retries, its
// dead-letter file, the metrics' observer, its credentials, the User-Agent, a batch sink's batches and
// queue, its stories. Keys are left out rather than set to undefined, so that each sink's own defaults
// apply.
import type { StoryOptions } from '../../events/story.ts';
import type { CommonSinkSpec, HttpSinkSpec, SinkContext } from '../component.ts';
import type { BacklogOptions } from './backlog.ts';
import type { HttpTls } from './http.ts';

/** What every delivering sink takes from its spec and the runtime. */
export function deliveryOptions(spec: HttpSinkSpec, context: SinkContext) {
  return {
    ...(spec.timeoutMs !== undefined ? { timeoutMs: spec.timeoutMs } : {}),
    ...(spec.retry ? { retry: spec.retry } : {}),
    ...(context.deadLetter ? { deadLetter: context.deadLetter } : {}),
    ...(context.runtime.deliveries ? { deliveries: context.runtime.deliveries } : {}),
    credentials: context.credentials,
  };
}

/** deliveryOptions, and the User-Agent of the sinks that speak HTTP. */
export function httpOptions(spec: HttpSinkSpec, context: SinkContext) {
  const { userAgent } = context.runtime;
  return { ...deliveryOptions(spec, context), ...(userAgent ? { userAgent } : {}) };
}

/** The batch sinks' (OTLP, search, Kafka) batches and queue. */
export function batchOptions(spec: {
  batchMaxEvents?: number;
  batchMaxBytes?: number;
  queue?: BacklogOptions;
}) {
  return {
    ...(spec.batchMaxEvents !== undefined ? { batchMaxEvents: spec.batchMaxEvents } : {}),
    ...(spec.batchMaxBytes !== undefined ? { batchMaxBytes: spec.batchMaxBytes } : {}),
    ...(spec.queue ? { queue: spec.queue } : {}),
  };
}

export function storiesOption(spec: CommonSinkSpec): { stories?: Partial<StoryOptions> } {
  const stories = storiesOf(spec);
  return stories ? { stories } : {};
}

/** The story options of a sink with stories on; undefined when off (docs/stories.md). */
export function storiesOf(spec: CommonSinkSpec): Partial<StoryOptions> | undefined {
  return typeof spec.stories === 'object' ? spec.stories : undefined;
}

/** What the log sinks (OTLP, search) share: their name, headers, TLS, batches and their queue. */
export function logSinkOptions(
  spec: HttpSinkSpec & { headers?: Record<string, string>; tls?: HttpTls } & Parameters<
      typeof batchOptions
    >[0],
  name: string,
  context: SinkContext,
) {
  return {
    name: context.unique(spec.name ?? name),
    log: context.runtime.log,
    ...(spec.headers ? { headers: spec.headers } : {}),
    ...(spec.tls ? { tls: spec.tls } : {}),
    ...batchOptions(spec),
    ...httpOptions(spec, context),
  };
}
