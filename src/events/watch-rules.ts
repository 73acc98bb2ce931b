// The Pipeline's `rules` stage, between the event builder and the router: the watch's own rules (event
// types, namespace globs and the config file's per-resource path rules and `only`), and --explain, which
// says for every event, for every sink, whether it was delivered and which rule decided (explain.ts).
// Resource names in filters are resolved through discovery by a DiscoveryResolver fed by the watch.

import type { EventFailures } from '../util/event-failures.ts';
import type { Logger } from '../util/log.ts';
import type { DiscoveryResolver } from './discovery-resolver.ts';
import { type ChangeEvent, type EventType, qualifiedResource } from './event.ts';
import { explainLine } from './explain.ts';
import {
  compileFilter,
  type EventFilter,
  evaluateContained,
  type FilterSpec,
  type FilterVerdict,
} from './filter.ts';

interface Router {
  explain(event: ChangeEvent): { sink: string; verdict: FilterVerdict }[];
}

/** The watch's own rules: which event types, the config file's global filter, and --explain. */
export interface WatchRuleSettings {
  events: ReadonlySet<EventType>;
  filter?: FilterSpec | undefined;
  /** Say on stderr, for every event and every sink, why it was delivered or dropped. */
  explain?: boolean | undefined;
}

export interface WatchRulesOptions {
  router: Router;
  log: Logger;
  resolver?: DiscoveryResolver;
  /** Where a filter that throws is reported; the event then goes on as if the filter had let it through. */
  failures?: EventFailures;
}

/**
 * The `rules` stage: returns what to hand on for `event` (changes trimmed by ignore rules), or undefined
 * to drop it.
 */
export function watchRules(
  settings: WatchRuleSettings,
  options: WatchRulesOptions,
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
