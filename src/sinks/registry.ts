// The sink types, in order: the one list of them (src/sinks/component.ts is what each one declares, in
// its own folder). The order is that of the `Sinks` help rows, of the flags' sinks, and of the types in the
// config file's schema. A new sink type is its folder and one line here.
import type { AnySinkComponent, EntryOf, SpecOf } from './component.ts';
import { fileComponent } from './file/factory.ts';
import { webhookComponent } from './http/webhook/factory.ts';
import { otlpComponent } from './logs/otlp/factory.ts';
import { searchComponent } from './logs/search/factory.ts';
import { kafkaComponent } from './stream/kafka/factory.ts';

export const SINK_COMPONENTS = [
  webhookComponent,
  kafkaComponent,
  otlpComponent,
  searchComponent,
  fileComponent,
] as const;

/**
 * The chat platforms are not components yet (issue 37): the help rows, the flags' sinks and the file's
 * schema list them after this many of SINK_COMPONENTS, where they have always been.
 */
const CHAT_PLATFORMS_AFTER = 1;
/** The components listed before the chat platforms, and those after them. */
export const COMPONENTS_BEFORE_CHAT = SINK_COMPONENTS.slice(0, CHAT_PLATFORMS_AFTER);
export const COMPONENTS_AFTER_CHAT = SINK_COMPONENTS.slice(CHAT_PLATFORMS_AFTER);

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

/** The component of a sink type; undefined for a type the registry does not know. */
export function sinkComponent(type: unknown): AnySinkComponent | undefined {
  return typeof type === 'string' ? byType.get(type) : undefined;
}

/** The entry schemas of every registered type (or of `components`), by type, in the registry's order. */
export function registeredSchemas(
  components: readonly AnySinkComponent[] = SINK_COMPONENTS,
): Record<RegisteredType, AnySinkComponent['schemas'][string]> {
  return Object.fromEntries(
    components.flatMap((component) =>
      (component.types as readonly string[]).map((type) => [
        type,
        (component.schemas as Record<string, unknown>)[type],
      ]),
    ),
  ) as Record<RegisteredType, AnySinkComponent['schemas'][string]>;
}
