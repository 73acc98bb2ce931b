// The sink types, in order: the one list of them (src/sinks/component.ts is what each one declares, in
// its own folder). The order is that of the `Sinks` help rows, of the flags' sinks, and of the types in the
// config file's schema. A new sink type is its folder and one line here.

import { flagName } from '../util/flag-spec.ts';
import type { ValueFormat } from '../util/value-format.ts';
import { discordComponent } from './chat/discord/factory.ts';
import { googleChatComponent } from './chat/google-chat/factory.ts';
import { mattermostComponent } from './chat/mattermost/factory.ts';
import { slackComponent } from './chat/slack/factory.ts';
import { teamsComponent } from './chat/teams/factory.ts';
import type { AnySinkComponent, EntryOf, SpecOf } from './component.ts';
import { fileComponent } from './file/factory.ts';
import { webhookComponent } from './http/webhook/factory.ts';
import { otlpComponent } from './logs/otlp/factory.ts';
import { searchComponent } from './logs/search/factory.ts';
import { stdoutComponent } from './stdout/factory.ts';
import { kafkaComponent } from './stream/kafka/factory.ts';

export const SINK_COMPONENTS = [
  stdoutComponent,
  webhookComponent,
  slackComponent,
  teamsComponent,
  discordComponent,
  mattermostComponent,
  googleChatComponent,
  kafkaComponent,
  otlpComponent,
  searchComponent,
  fileComponent,
] as const;

type Registered = (typeof SINK_COMPONENTS)[number];
/** The config entry of every registered type. */
export type RegisteredEntry = EntryOf<Registered>;
/** The spec of every registered type. */
export type RegisteredSpec = SpecOf<Registered>;
/** A registered type's name. */
export type RegisteredType = RegisteredSpec['type'];

const byType = new Map<string, AnySinkComponent>(
  SINK_COMPONENTS.flatMap((component) =>
    component.types.map((type) => [type, component as AnySinkComponent]),
  ),
);

/** The flag that adds a sink of each registered type that has flags (its first), for the messages that list them. */
export function sinkFlagNames(): string[] {
  return SINK_COMPONENTS.flatMap((component) => {
    const first = component.flags?.[0];
    return first ? [flagName(first)] : [];
  });
}

/** The component of a sink type; undefined for a type the registry does not know. */
export function sinkComponent(type: unknown): AnySinkComponent | undefined {
  return typeof type === 'string' ? byType.get(type) : undefined;
}

/** Whether a type's sinks deliver (a queue, retries, dead letters): unless it says `delivers: false`. */
export function sinkDelivers(type: string): boolean {
  return sinkComponent(type)?.delivers !== false;
}

/** The types whose sinks do not deliver (`delivers: false`), for the messages that name them. */
export function typesThatDoNotDeliver(): string[] {
  return SINK_COMPONENTS.flatMap((component) => (component.delivers === false ? [...component.types] : []));
}

/** The type whose sink -o/--output and the file's `output:` choose: the component that has fromOutput. */
export const OUTPUT_COMPONENT: AnySinkComponent | undefined = (
  SINK_COMPONENTS as readonly AnySinkComponent[]
).find((component) => component.fromOutput !== undefined);

/** The entry schemas of every registered type, by type, in the registry's order. */
export function registeredSchemas(): Record<RegisteredType, AnySinkComponent['schemas'][string]> {
  return Object.fromEntries(
    SINK_COMPONENTS.flatMap((component) =>
      (component.types as readonly string[]).map((type) => [
        type,
        (component.schemas as Record<string, unknown>)[type],
      ]),
    ),
  ) as Record<RegisteredType, AnySinkComponent['schemas'][string]>;
}

/** The formats the registered types' schemas name of their own (src/config/formats.ts adds the shared ones). */
export function registeredFormats(): ValueFormat[] {
  return SINK_COMPONENTS.flatMap((component): readonly ValueFormat[] => component.formats ?? []);
}
