// The memory bounds of a watch in force (docs/deploy.md, "Memory"): each sink's part of the heap's
// budget (util/memory-budget.ts), and the check that what is in force, explicit settings included, fits
// the heap. Bounds left to their share fit by construction (25/48 of the heap at most); an explicit setting
// may take more, and a set of them that adds up to more than the heap itself is refused at the start with
// one sentence (exit code 2), before anything connects: such a watch would run until a slow sink or a
// standby filled its buffers, and then die of a full heap, long after whoever set them has gone.
import type { SinkSpec } from '../sinks/core/setup.ts';
import { sinkComponent, sinkDelivers } from '../sinks/registry.ts';
import { UsageError } from '../util/errors.ts';
import {
  ADMISSION_CONCURRENT_REQUESTS,
  AUDIT_CONCURRENT_REQUESTS,
  type MemoryBounds,
  SINK_SPLIT,
  sinkBounds,
} from '../util/memory-budget.ts';
import { formatSize } from '../util/size.ts';
import type { WatchSettings } from './watch-settings.ts';

/** A sink on the chat core: its queue is the chat core's (16 MiB at most), the others' a backlog (64 MiB). */
function isChat(spec: SinkSpec): spec is SinkSpec & { queueMaxBytes?: number } {
  return sinkComponent(spec.type)?.chatQueue === true;
}

/**
 * The sinks with their queue's and open stories' bounds: each sink's part of the sinks' share (a sink that
 * does not deliver has no queue: a part only for its stories), or for stories the explicit
 * `stories.maxOpenSize` (`storyBytesGiven`). `terminalStories`: the pretty standard output that -o adds
 * tells stories too, and shares with them.
 */
export function withSinkMemory(
  sinks: readonly SinkSpec[],
  bounds: MemoryBounds,
  options: { storyBytesGiven: number | undefined; terminalStories: boolean },
): SinkSpec[] {
  const queued = sinks.filter((spec) => sinkDelivers(spec.type)).length;
  const storied = sinks.filter((spec) => !sinkDelivers(spec.type) && typeof spec.stories === 'object').length;
  const each = sinkBounds(bounds, queued + storied + (options.terminalStories ? 1 : 0));
  const storyBytes = options.storyBytesGiven ?? each.storyBytes;
  return sinks.map((spec): SinkSpec => {
    const stories =
      typeof spec.stories === 'object' ? { stories: { ...spec.stories, maxOpenBytes: storyBytes } } : {};
    // A queue's bound is set only below the sink's own default (its maximum): on a large heap, as before.
    if (!sinkDelivers(spec.type)) return { ...spec, ...stories };
    if (isChat(spec)) {
      const below = each.chatQueueBytes < SINK_SPLIT.queue.chatMaxBytes;
      return { ...spec, ...stories, ...(below ? { queueMaxBytes: each.chatQueueBytes } : {}) };
    }
    if (each.queueBytes >= SINK_SPLIT.queue.maxBytes) return { ...spec, ...stories };
    const queue = 'queue' in spec ? spec.queue : undefined;
    return { ...spec, ...stories, queue: { ...queue, maxBytes: each.queueBytes } } as SinkSpec;
  });
}

/** The bounds the environment may set (docs/watching.md, "Tuning"), and whether the watch stands by. */
export interface RuntimeMemory {
  stateBacklogBytes: number;
  standbyBufferBytes: number;
  leaderElect: boolean;
}

interface Part {
  /** The setting that sets it, in the refusal. */
  setting: string;
  bytes: number;
}

/** What the settings hold in memory at most, buffer by buffer (only those the watch has). */
export function memoryInForce(settings: WatchSettings, runtime: RuntimeMemory): Part[] {
  const parts: Part[] = [];
  if (settings.state) parts.push({ setting: 'KUBEDIFF_STATE_MAX_BACKLOG', bytes: runtime.stateBacklogBytes });
  if (runtime.leaderElect)
    parts.push({ setting: 'KUBEDIFF_STANDBY_MAX_BUFFER', bytes: runtime.standbyBufferBytes });
  if (settings.admission) {
    const bytes = settings.admission.maxRequestBytes;
    parts.push({
      setting: `admission.maxRequestSize (${formatSize(bytes)} × ${ADMISSION_CONCURRENT_REQUESTS})`,
      bytes: bytes * ADMISSION_CONCURRENT_REQUESTS,
    });
  }
  if (settings.audit || settings.admission) {
    parts.push({ setting: "the who join's waiting changes", bytes: settings.memory.whoPendingBytes });
  }
  if (settings.audit) {
    const bytes = settings.audit.maxRequestBytes;
    parts.push({
      setting: `audit.maxRequestSize (${formatSize(bytes)} × ${AUDIT_CONCURRENT_REQUESTS})`,
      bytes: bytes * AUDIT_CONCURRENT_REQUESTS,
    });
  }
  let stories = 0;
  let queues = 0;
  for (const spec of settings.delivery.sinks) {
    if (typeof spec.stories === 'object') stories += spec.stories.maxOpenBytes ?? SINK_SPLIT.stories.maxBytes;
    if (!sinkDelivers(spec.type)) continue;
    if (isChat(spec)) queues += spec.queueMaxBytes ?? SINK_SPLIT.queue.chatMaxBytes;
    else queues += ('queue' in spec ? spec.queue?.maxBytes : undefined) ?? SINK_SPLIT.queue.maxBytes;
  }
  if (settings.stories.terminal) stories += settings.stories.options.maxOpenBytes;
  if (queues > 0) parts.push({ setting: "the sinks' queues", bytes: queues });
  if (stories > 0) parts.push({ setting: 'stories.maxOpenSize (per sink with stories)', bytes: stories });
  return parts;
}

/**
 * Refuses bounds that add up to more than the heap (a UsageError, exit code 2). Only explicit settings
 * can get there: the shares of the heap add up to a little over half of it (BUFFER_SHARE).
 */
export function checkMemoryFits(settings: WatchSettings, runtime: RuntimeMemory): void {
  const parts = memoryInForce(settings, runtime);
  const total = parts.reduce((sum, part) => sum + part.bytes, 0);
  const heap = settings.memory.heapBytes;
  if (total <= heap) return;
  const listed = parts.map((part) => `${part.setting} ${formatSize(part.bytes)}`).join(', ');
  throw new UsageError(
    `the memory bounds add up to ${formatSize(total)}, more than the ${formatSize(heap)} heap Node may use (${listed}): lower the ones you set, or give Node a larger heap (NODE_OPTIONS=--max-old-space-size=<MiB>; the chart's maxOldSpaceSizeMB), docs/deploy.md "Memory".`,
  );
}
