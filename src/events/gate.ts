// Between the event builder and the router: the watch's own rules (event types, namespace globs and the
// config file's per-resource path rules and `only`), and --explain, which says for every event, for every
// sink, whether it was delivered and which rule decided. Resource names in filters are resolved through
// discovery (short names and kinds of custom resources too) by a DiscoveryResolver fed by the watch.

import { parseResourceName, resolveResourceName } from '../kube/resource-names.ts';
import { qualifiedName, type ResourceType } from '../kube/types.ts';
import type { EventFailures } from '../util/event-failures.ts';
import type { Logger } from '../util/log.ts';
import { type ChangeEvent, type EventType, qualifiedResource } from './event.ts';
import {
  compileFilter,
  type EventFilter,
  evaluateContained,
  type FilterSpec,
  type FilterVerdict,
} from './filter.ts';

/** The resource types discovery offers, for resolving the names people write in filters. */
export class DiscoveryResolver {
  #types: readonly ResourceType[] = [];
  #cache = new Map<string, readonly string[] | undefined>();

  update(types: readonly ResourceType[]): void {
    this.#types = types;
    this.#cache.clear();
  }

  /** `deploy` → ['deployments.apps']; undefined when discovery does not know the name (yet). */
  readonly resolve = (text: string): readonly string[] | undefined => {
    if (this.#cache.has(text)) return this.#cache.get(text);
    const matches = resolveResourceName(parseResourceName(text), this.#types).map(qualifiedName);
    const result = matches.length > 0 ? matches : undefined;
    this.#cache.set(text, result);
    return result;
  };
}

interface Router {
  explain(event: ChangeEvent): { sink: string; verdict: FilterVerdict }[];
}

/** The watch's own rules: which event types, the config file's global filter, and --explain. */
export interface GateRules {
  events: ReadonlySet<EventType>;
  filter?: FilterSpec | undefined;
  /** Say on stderr, for every event and every sink, why it was delivered or dropped. */
  explain?: boolean | undefined;
}

export interface EventGateOptions {
  router: Router;
  log: Logger;
  resolver?: DiscoveryResolver;
  /** Where a filter that throws is reported; the event then goes on as if the filter had let it through. */
  failures?: EventFailures;
}

/** Returns what to hand the router for `event` (changes trimmed by ignore rules), or undefined to drop it. */
export function eventGate(
  settings: GateRules,
  options: EventGateOptions,
): (event: ChangeEvent) => ChangeEvent | undefined {
  const filter: EventFilter | undefined = settings.filter
    ? compileFilter(settings.filter, {
        owner: 'the watch',
        ...(options.resolver ? { resolve: options.resolver.resolve } : {}),
      })
    : undefined;
  const explain = (event: ChangeEvent, target: string, verdict: FilterVerdict) =>
    options.log.info(explainLine(event, target, verdict), {
      component: 'explain',
      event: event.id,
      type: event.type,
      resource: qualifiedResource(event),
      sink: target,
      delivered: verdict.deliver,
      rule: verdict.deliver ? undefined : verdict.rule,
    });
  return (event) => {
    if (!settings.events.has(event.type)) {
      if (settings.explain) {
        explain(event, 'all sinks', {
          deliver: false,
          rule: 'types',
          reason: `events: ${[...settings.events].join(', ').toLowerCase()} does not include ${event.type.toLowerCase()}`,
        });
      }
      return undefined;
    }
    let passed = event;
    if (filter) {
      const verdict = evaluateContained(
        filter,
        event,
        options.failures,
        'the watch',
        settings.explain === true,
      );
      if (!verdict.deliver) {
        if (settings.explain) explain(event, 'all sinks', verdict);
        return undefined;
      }
      passed = verdict.event ?? event;
    }
    if (settings.explain) {
      for (const { sink, verdict } of options.router.explain(passed)) explain(passed, sink, verdict);
    }
    return passed;
  };
}

/**
 * One --explain line: the event, where it went (a sink, or `all sinks` for the watch's own rules) and why.
 * `explain: UPDATED deployments.apps shop/web 6f1c…:48213 → webhook audit: delivered (resource deploy)`.
 */
export function explainLine(event: ChangeEvent, target: string, verdict: FilterVerdict): string {
  const { namespace, name } = event.object;
  const subject = `${event.type} ${qualifiedResource(event)} ${namespace ? `${namespace}/` : ''}${name} ${event.id}`;
  const outcome = verdict.deliver
    ? `delivered (${verdict.reason}${verdict.event ? `; ${verdict.event.changes?.length ?? 0} of ${event.changes?.length ?? 0} changes kept` : ''})`
    : `dropped by ${verdict.rule}: ${verdict.reason}`;
  return `explain: ${subject} → ${target}: ${outcome}`;
}
